"""A receiver of planlock's notifications (`planlock notify`, `planlock serve --access`): it checks
every delivery's signature with the Standard Webhooks package (`pip install standardwebhooks`)
and prints what it was told. Run it with the receiver's secret in PLANLOCK_WEBHOOK_SECRET:

    PLANLOCK_WEBHOOK_SECRET=whsec_... python3 examples/webhook_receiver.py   # listens on 127.0.0.1:9000

A delivery whose signature does not verify is answered 401 and printed as such; planlock tries
again later under the same `webhook-id`, so a receiver should treat ids it has seen as done.
"""

import json
import os
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


HTTPServer(("127.0.0.1", 9000), Receiver).serve_forever()
