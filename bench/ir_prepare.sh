# Sourced by bench/api_ir.sh and bench/rederive_ir.sh (run from the repository's root):
# ir_prepare BUILD_DIR NAME checks that BUILD_DIR/bench/NAME is built and valgrind installed,
# then sets $bench to the binary and $out to a fresh directory for the profiles
# (/tmp/api_ir.XXXXXX for api_bench, and so on).
ir_prepare() {
  bench="$1/bench/$2"
  [ -x "$bench" ] || { echo "no $bench: build the release preset first" >&2; exit 1; }
  command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
  out=$(mktemp -d "/tmp/${2%_bench}_ir.XXXXXX")
}
