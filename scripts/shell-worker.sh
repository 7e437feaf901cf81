#!/bin/sh
# A minimal pilot worker in POSIX sh + curl, for the Slurm integration test: register
# (adopting the placeholder through $SLURM_JOB_ID), poll, run each job's bundle run.sh,
# complete or fail it, deregister after BATON_IDLE_POLLS empty polls. baton-worker is the
# real agent; this only proves the provisioning path end to end.
set -eu
# The batch script names the file holding the token (BATON_API_TOKEN_FILE), never the token.
if [ -z "${BATON_API_TOKEN:-}" ] && [ -n "${BATON_API_TOKEN_FILE:-}" ]; then
  BATON_API_TOKEN=$(head -n 1 "$BATON_API_TOKEN_FILE")
  # A one-time credential, spent once this worker registers: no payload finds it later.
  if [ "${BATON_API_TOKEN_FILE_REMOVE:-}" = 1 ]; then rm -f "$BATON_API_TOKEN_FILE"; fi
fi
: "${BATON_URL:?}" "${BATON_API_TOKEN:?}" "${BATON_WORKER_IMAGE_KEY:?}"
idle_polls=${BATON_IDLE_POLLS:-5}
provider=""
[ -n "${SLURM_JOB_ID:-}" ] && provider="${BATON_CLUSTER_NAME:-}:$SLURM_JOB_ID"

api() {  # METHOD PATH [BODY]
  if [ -n "${WT:-}" ]; then
    curl -sS -f -X "$1" -H "Content-Type: application/json" -H "X-API-Token: $BATON_API_TOKEN" \
      -H "X-Worker-Token: $WT" --data "${3:-}" "$BATON_URL$2"
  else
    curl -sS -f -X "$1" -H "Content-Type: application/json" -H "X-API-Token: $BATON_API_TOKEN" \
      --data "${3:-}" "$BATON_URL$2"
  fi
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

reg=$(api POST /workers/register "{\"platform\":\"hpc\",\"gpu_model\":\"test-gpu\",\"gpu_count\":1,\"worker_image_key\":\"$BATON_WORKER_IMAGE_KEY\",\"slurm_job_id\":\"$provider\"}")
WID=$(echo "$reg" | field worker_id)
WT=$(echo "$reg" | field worker_token)
echo "registered as $WID (provider $provider)"
misses=0
while [ "$misses" -lt "$idle_polls" ]; do
  r=$(api POST "/jobs/request?worker_id=$WID" "")
  case "$r" in
    *'"assigned"'*)
      misses=0
      JID=$(echo "$r" | field job_id)
      bundle=$(echo "$r" | field input_bundle_path)
      api POST "/jobs/$JID/start" "" >/dev/null
      echo "running job $JID from $bundle"
      if [ -n "${BATON_TEST_GO_SILENT:-}" ]; then  # tests: a hung worker whose allocation lives on
        sleep 600
      fi
      if (cd "$bundle" && sh ./run.sh); then
        api POST "/jobs/$JID/complete" "" >/dev/null
      else
        api POST "/jobs/$JID/fail" '{"reason":"payload_failed"}' >/dev/null
      fi
      ;;
    *)
      misses=$((misses + 1))
      sleep 1
      ;;
  esac
done
api POST "/workers/$WID/deregister" "" >/dev/null
echo "deregistered $WID"
