"""A webhook receiver for tests/it/webhooks.rs: every delivery is checked with the Standard
Webhooks package from PyPI (a real verifier) and written to a JSON-lines file, then answered as
the mode says:

  ok          204 at once
  fail-first  500 the first time an id arrives, 200 after
  hang        no answer for 60 s
  slow        200 after 400 ms (to see whether two senders deliver one id at once)
  slow-first  the first time an id arrives, 200 after 5 s (a sender is killed meanwhile); 200 after

Each request is logged when it arrives (phase "start") and when it is answered (phase "end").

Usage: receiver.py SECRET MODE LOG_FILE. Prints its port on the first line of stdout.
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

secret, mode, log_file = sys.argv[1], sys.argv[2], sys.argv[3]
verifier = Webhook(secret)
seen = set()
lock = threading.Lock()


class Receiver(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        started = time.time()
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            payload = verifier.verify(body, headers)
            verified = True
        except Exception as e:  # noqa: BLE001: any failure to verify is recorded as such
            payload, verified = {"error": str(e)}, False
        msg_id = headers.get("webhook-id", "")
        with lock:
            first = msg_id not in seen
            seen.add(msg_id)
            with open(log_file, "a") as log:
                log.write(json.dumps({"id": msg_id, "phase": "start", "start": started}) + "\n")
        if mode == "hang":
            time.sleep(60)
        if mode == "slow":
            time.sleep(0.4)
        if mode == "slow-first" and first:
            time.sleep(5)
        status = 500 if (mode == "fail-first" and first) else (204 if mode == "ok" else 200)
        entry = {
            "phase": "end",
            "id": msg_id,
            "verified": verified,
            "type": payload.get("type") if verified else None,
            "data": payload.get("data") if verified else None,
            "body": body.decode("utf-8", "replace"),
            "status": status,
            "start": started,
            "end": time.time(),
        }
        with lock, open(log_file, "a") as log:
            log.write(json.dumps(entry) + "\n")
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
