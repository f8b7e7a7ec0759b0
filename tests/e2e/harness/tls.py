"""Certificates made at test time and HTTPS servers, for the TLS end-to-end tests.

`make_certs(dir, name)` writes a CA (`NAME-ca.pem`) and a leaf for `localhost` and
`127.0.0.1` it signs (`NAME-cert.pem`, `NAME-key.pem`) with the `cryptography` package.
`HttpsServer` is an `HttpServer` started with `--tls-cert`/`--tls-key` that waits for the
HTTPS announcement; it is not recorded (the recording proxy speaks plain HTTP upstream), so
its clients talk to it directly.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
import shutil
import ssl
import http.client
import json
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from .http_server import HttpServer, wait_announced

READY_TLS = re.compile(r"serving MCP over HTTPS at https://(\S+)/mcp")
READY_TLS_DASHBOARD = re.compile(r"serving the read-only dashboard at https://(\S+)/ ")


@dataclass
class Certs:
    ca: Path
    cert: Path
    key: Path


def make_certs(directory: Path, name: str) -> Certs:
    """A CA and a leaf for localhost / 127.0.0.1 signed by it, as PEM files under `directory`."""
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    certs = Certs(directory / f"{name}-ca.pem", directory / f"{name}-cert.pem", directory / f"{name}-key.pem")
    certs.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    certs.cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    certs.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    return certs


def install(certs: Certs, cert: Path, key: Path) -> None:
    """Copies `certs`' leaf and key over the files a server serves."""
    shutil.copyfile(certs.cert, cert)
    shutil.copyfile(certs.key, key)


class HttpsServer(HttpServer):
    """`bernstein mcp --transport http --tls-cert CERT --tls-key KEY`, on a free port."""

    def __init__(self, launcher, label: str, cert: Path, key: Path, **kw):
        extra = [*kw.pop("extra_args", []), "--tls-cert", str(cert), "--tls-key", str(key)]
        super().__init__(launcher, label, extra_args=extra, record=False, **kw)

    def _wait_ready(self) -> str:
        return wait_announced(self.proc, self.stderr_path, READY_TLS)

    @property
    def direct_base(self) -> str:
        return f"https://127.0.0.1:{self.port}"


def context(*cas: Path) -> ssl.SSLContext:
    """A client context trusting exactly the CAs given."""
    ctx = ssl.create_default_context(cafile=None)
    ctx.load_verify_locations(cadata="".join(p.read_text() for p in cas))
    return ctx


def stateless_status_call(port: int, ctx: ssl.SSLContext, call_id: int) -> dict:
    """A 2026-07-28 `tools/call` of `bernstein_status` over HTTPS on a new connection."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=30)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {
            "name": "bernstein_status", "arguments": {},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
        conn.request("POST", "/mcp", body=body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "bernstein_status"})
        resp = conn.getresponse()
        text = resp.read().decode()
        assert resp.status == 200, (resp.status, text)
        answer = json.loads(text)
        assert answer["id"] == call_id and answer["result"]["isError"] is False, answer
        return answer
    finally:
        conn.close()


def peer_certificate(port: int, ctx: ssl.SSLContext) -> bytes:
    """The DER of the certificate a new connection is presented."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.getpeercert(binary_form=True)


def der_of(pem: Path) -> bytes:
    return x509.load_pem_x509_certificate(pem.read_bytes()).public_bytes(serialization.Encoding.DER)
