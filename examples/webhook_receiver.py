"""A receiver of planlock's notifications (`planlock notify`, `planlock serve --access`): it checks
every delivery's signature with the Standard Webhooks package (`pip install standardwebhooks`)
and prints what it was told. Run it with the receiver's secret in PLANLOCK_WEBHOOK_SECRET:

    PLANLOCK_WEBHOOK_SECRET=whsec_... python3 examples/webhook_receiver.py [--port 9000] [--host 127.0.0.1]

A delivery whose signature does not verify is answered 401 and printed as such; planlock tries
again later under the same `webhook-id`, so a receiver should treat ids it has seen as done.
"""

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks.webhooks import Webhook

verifier = Webhook(os.environ["PLANLOCK_WEBHOOK_SECRET"])
seen = set()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            event = verifier.verify(body, {k.lower(): v for k, v in self.headers.items()})
        except Exception as e:  # noqa: BLE001: any failure to verify is refused
            print(f"refused a delivery: {e}")
            self.send_response(401)
            self.end_headers()
            return
        msg_id = self.headers["webhook-id"]
        if msg_id not in seen:
            seen.add(msg_id)
            data = event["data"]
            print(f"{event['type']}: session {data['session']}, step {data['stepId']}: {json.dumps(data)}")
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    args.add_argument("--port", type=int, default=9000, help="the port to listen on (default 9000)")
    given = args.parse_args()
    server = HTTPServer((given.host, given.port), Receiver)
    print(f"listening on http://{given.host}:{server.server_port}/", flush=True)
    sys.stdout.reconfigure(line_buffering=True)
    server.serve_forever()
