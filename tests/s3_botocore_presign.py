#!/usr/bin/python3
"""Presigned S3 URLs made by botocore, for tests/s3_sigv4_test.cpp to compare with its own.

Reads a JSON list of cases on stdin and writes a JSON list of URLs (one per case) on stdout.
A case: {"mode": "client" | "auth", "endpoint", "bucket", "key", "region", "path_style",
"access_key", "secret_key", "time" (seconds since the epoch), "expires",
"client_method" and "params" (mode client: generate_presigned_url's), or "method", "path"
(encoded), "params" ([[name, value]], the operation's query) and "headers" ([[name, value]])
(mode auth: S3SigV4QueryAuth on a request built here)}. Mode "header": S3SigV4Auth (the
Authorization header) on a request to "url" with "method", "headers" and "body"; the answer is
that header instead of a URL. The clock botocore reads is fixed at "time". Needs Debian's
python3-botocore (scripts/setup.sh), run by /usr/bin/python3.
"""
import datetime
import json
import os
import sys
from unittest import mock

os.environ["AWS_CONFIG_FILE"] = "/dev/null"  # no profile of the machine's may change the answer
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = "/dev/null"

try:
    import botocore.session
    from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.config import Config
    from botocore.credentials import Credentials
except ImportError as e:
    sys.exit(f"botocore is not importable by {sys.executable} ({e}): scripts/setup.sh installs python3-botocore")


def presign(case):
    fixed = datetime.datetime.utcfromtimestamp(case["time"])
    with mock.patch("botocore.auth.datetime") as dt:
        dt.datetime.utcnow.return_value = fixed
        if case["mode"] == "client":
            session = botocore.session.get_session()
            client = session.create_client(
                "s3", region_name=case["region"], endpoint_url=case["endpoint"],
                aws_access_key_id=case["access_key"], aws_secret_access_key=case["secret_key"],
                config=Config(signature_version="s3v4",
                              s3={"addressing_style": "path" if case["path_style"] else "virtual"}))
            params = dict(case["params"])
            params.update(Bucket=case["bucket"], Key=case["key"])
            return client.generate_presigned_url(case["client_method"], Params=params, ExpiresIn=case["expires"])
        if case["mode"] == "header":
            request = AWSRequest(method=case["method"], url=case["url"], headers=dict(case["headers"]),
                                 data=case["body"].encode())
            S3SigV4Auth(Credentials(case["access_key"], case["secret_key"]), "s3", case["region"]).add_auth(request)
            return request.headers["Authorization"]
        request = AWSRequest(method=case["method"], url=case["endpoint"] + case["path"],
                             headers=dict(case["headers"]), params=dict(case["params"]))
        creds = Credentials(case["access_key"], case["secret_key"])
        S3SigV4QueryAuth(creds, "s3", case["region"], expires=case["expires"]).add_auth(request)
        return request.url


print(json.dumps([presign(c) for c in json.load(sys.stdin)]))
