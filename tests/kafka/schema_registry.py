#!/usr/bin/env python3
"""A schema registry for the end-to-end tests: the lookup the projector uses.

Serves `GET /schemas/ids/{id}` as the Confluent Schema Registry REST API
does (`{"schema": "..."}`, or 404 with error code 40403), from the files
`{id}.avsc` that produce.py registers in a directory. Files added while it
runs are served at once, as new registrations would be. No other endpoint
of the registry API is implemented.

  schema_registry.py --dir DIR --port-file FILE   (port 0: a free port, written to FILE)
"""

import argparse
import json
import os
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def handler_for(directory):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            match = re.fullmatch(r"/schemas/ids/(\d+)", self.path)
            path = os.path.join(directory, f"{match.group(1)}.avsc") if match else None
            if path and os.path.exists(path):
                with open(path) as handle:
                    self.answer(200, {"schema": handle.read()})
            else:
                self.answer(404, {"error_code": 40403, "message": "Schema not found"})

        def answer(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port-file", required=True)
    arguments = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(arguments.dir))
    with open(arguments.port_file + ".partial", "w") as handle:
        handle.write(str(server.server_address[1]))
    os.rename(arguments.port_file + ".partial", arguments.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
