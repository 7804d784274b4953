"""An independent webhook receiver: the Python standard library and
`cryptography`, nothing of ours. It checks each delivery as a partner
would: the Standard Webhooks `v1a` signature (Ed25519 over
`{webhook-id}.{webhook-timestamp}.{body}`) against the production keys the
service publishes at `/keys`, the timestamp against its own clock, and it
deduplicates by `webhook-id`.

    receiver.py serve --keys-file FILE --directory DIR [--hold-first SECONDS]
        Serves HTTPS on 127.0.0.1 with a certificate of its own test
        authority (written to DIR/ca.pem), prints `listening PORT`, and logs
        every request as a JSON line to DIR/log.jsonl: {"id", "verdict",
        "body", "headers"}, the verdict `stored`, `duplicate`, `challenge`
        or why it was rejected. With --hold-first, it holds its answer to
        the first delivery of notifications that long, after storing it.
        FILE is the key set saved from `/keys`, read at the first request.

    receiver.py check --keys FILE --message FILE [--now SECONDS]
        Checks one logged request (its headers and body) and prints the
        verdict; exits 1 when it is rejected.
"""

import argparse
import base64
import datetime
import http.server
import ipaddress
import json
import ssl
import sys
import threading
import time

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.x509.oid import NameOID

TOLERANCE_SECONDS = 300


def public_keys(key_set):
    """The Ed25519 keys of a JWK Set."""
    keys = []
    for key in key_set["keys"]:
        if key.get("kty") == "OKP" and key.get("crv") == "Ed25519":
            raw = base64.urlsafe_b64decode(key["x"] + "=" * (-len(key["x"]) % 4))
            keys.append(Ed25519PublicKey.from_public_bytes(raw))
    return keys


def verify(headers, body, keys, now):
    """None when the delivery is genuine and fresh, else why not."""
    msg_id, timestamp = headers["webhook-id"], headers["webhook-timestamp"]
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        return "timestamp too old or too new"
    signed = f"{msg_id}.{timestamp}.".encode() + body
    for signature in headers["webhook-signature"].split():
        scheme, _, encoded = signature.partition(",")
        for key in keys if scheme == "v1a" else []:
            try:
                key.verify(base64.b64decode(encoded), signed)
                return None
            except (InvalidSignature, ValueError):
                pass
    return "no signature verifies"


def test_authority(directory):
    """A CA (written to ca.pem) and a certificate it signed for 127.0.0.1."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("hooks.partner.test")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with open(f"{directory}/ca.pem", "wb") as file:
        file.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(f"{directory}/server.pem", "wb") as file:
        file.write(leaf.public_bytes(serialization.Encoding.PEM))
        file.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )


def serve(arguments):
    test_authority(arguments.directory)
    lock = threading.Lock()
    seen = set()
    state = {"keys": None, "held": False}
    log = open(f"{arguments.directory}/log.jsonl", "a", encoding="utf-8")

    def keys():
        if state["keys"] is None:
            with open(arguments.keys_file, encoding="utf-8") as file:
                state["keys"] = public_keys(json.load(file))
        return state["keys"]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            headers = {name.lower(): value for name, value in self.headers.items()}
            reason = verify(headers, body, keys(), time.time())
            message = json.loads(body) if reason is None else None
            with lock:
                if reason is not None:
                    verdict = f"rejected: {reason}"
                elif message["type"] == "webhook.challenge":
                    verdict = "challenge"
                elif headers["webhook-id"] in seen:
                    verdict = "duplicate"
                else:
                    seen.add(headers["webhook-id"])
                    verdict = "stored"
                entry = {"id": headers.get("webhook-id"), "verdict": verdict, "headers": headers}
                entry["body"] = body.decode()
                log.write(json.dumps(entry) + "\n")
                log.flush()
                hold = verdict == "stored" and arguments.hold_first and not state["held"]
                if hold:
                    state["held"] = True
            if hold:
                print("holding", headers["webhook-id"], flush=True)
                time.sleep(arguments.hold_first)
            if verdict.startswith("rejected"):
                self.send_response(401)
                self.end_headers()
                return
            answer = json.dumps({"challenge": message["challenge"]}).encode() if verdict == "challenge" else b""
            self.send_response(200 if answer else 204)
            if answer:
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(f"{arguments.directory}/server.pem")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print("listening", server.server_address[1], flush=True)
    server.serve_forever()


def check(arguments):
    with open(arguments.keys, encoding="utf-8") as file:
        keys = public_keys(json.load(file))
    with open(arguments.message, encoding="utf-8") as file:
        message = json.load(file)
    now = arguments.now if arguments.now is not None else time.time()
    reason = verify(message["headers"], message["body"].encode(), keys, now)
    print("valid" if reason is None else f"rejected: {reason}")
    sys.exit(0 if reason is None else 1)


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    serving = commands.add_parser("serve")
    serving.add_argument("--keys-file", required=True)
    serving.add_argument("--directory", required=True)
    serving.add_argument("--hold-first", type=float, default=0)
    checking = commands.add_parser("check")
    checking.add_argument("--keys", required=True)
    checking.add_argument("--message", required=True)
    checking.add_argument("--now", type=float)
    arguments = parser.parse_args()
    serve(arguments) if arguments.command == "serve" else check(arguments)


if __name__ == "__main__":
    main()
