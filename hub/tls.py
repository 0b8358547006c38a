"""TLS on the hub's public address: a certificate given (``--ssl-cert``/``--ssl-key``, e.g. a
domain's from Let's Encrypt) or, for a room without a domain, one the hub makes itself
(``--self-signed``) in ``ROOT/hub`` (root's alone), kept across restarts so its fingerprint
stays the one attendees checked. Browsers warn about a self-signed certificate: attendees
compare its SHA-256 fingerprint (the banner prints it) with the one their browser shows.
Without either, the hub speaks plain HTTP and the banner says so.
"""

import datetime
import ipaddress
import os
import socket
import ssl
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hub import settings
from hub.environment import SetupError

VALID_DAYS = 90  # a workshop's days; `make hub-end` removes it anyway


def files(s: settings.Settings) -> tuple[Path, Path] | None:
    """(certificate, key) the proxy serves, or None for plain HTTP."""
    if s.self_signed:
        if s.ssl_cert or s.ssl_key:
            raise SetupError(
                "give either --ssl-cert/--ssl-key or --self-signed (a restart keeps the last "
                "start's: turn it off with --no-self-signed)"
            )
        return s.state / "tls-cert.pem", s.state / "tls-key.pem"
    if bool(s.ssl_cert) != bool(s.ssl_key):
        raise SetupError("TLS needs both --ssl-cert and --ssl-key (PEM files)")
    return (Path(s.ssl_cert), Path(s.ssl_key)) if s.ssl_cert else None


def prepare(s: settings.Settings) -> tuple[Path, Path] | None:
    """The certificate and key, made if self-signed and missing, checked to load together:
    a bad pair is one line here rather than a proxy that never answers."""
    pair = files(s)
    if pair and s.self_signed and not all(p.is_file() for p in pair):
        make_self_signed(*pair, s.ip)
    if pair:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(*pair)
        except (OSError, ssl.SSLError) as err:
            raise SetupError(
                f"the certificate {pair[0]} and key {pair[1]} do not load as a pair: {err}"
            ) from None
    return pair


def _names(ip: str) -> list[x509.GeneralName]:
    """The names a browser may reach the hub by: this host's name, localhost, loopback and
    the address it listens on."""
    found: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.DNSName(socket.gethostname())]
    addresses = {"127.0.0.1"} | ({ip} if ip not in ("", "0.0.0.0") else set())
    return found + [x509.IPAddress(ipaddress.ip_address(a)) for a in sorted(addresses)]


def make_self_signed(cert: Path, key: Path, ip: str) -> None:
    """A P-256 key (root's alone, 0600) and a certificate for it, signed by itself."""
    private = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, socket.gethostname())])
    now = datetime.datetime.now(datetime.UTC)
    made = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # clocks in the room differ
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(_names(ip)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(private, hashes.SHA256())
    )
    key.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(private.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))  # fmt: skip
    os.chmod(key, 0o600)
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))


def fingerprint(cert: Path) -> str:
    """SHA-256 of the certificate as browsers show it (AB:CD:...)."""
    digest = x509.load_pem_x509_certificate(cert.read_bytes()).fingerprint(hashes.SHA256())
    return ":".join(f"{b:02X}" for b in digest)
