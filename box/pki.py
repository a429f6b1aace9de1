"""Throwaway certificates for a loopback control plane (what envtest generates, in Python).

One CA signs the apiserver's serving certificate (localhost, 127.0.0.1 and the in-cluster
service names) and the admin client certificate (O=system:masters, so RBAC lets it do
anything). The service-account key pair signs and verifies tokens. Everything lives in
one temp directory and dies with it; keys are EC P-256 because RSA generation costs
seconds on a 2-core machine.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=1)  # a test session, with room for clock skew
SERVING_DNS = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
SERVING_IPS = ("127.0.0.1", "10.0.0.1")  # 10.0.0.1: first IP of --service-cluster-ip-range


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files the apiserver flags and the kubeconfig point at."""

    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_private_key: Path
    sa_public_key: Path


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _leaf(
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
    subject: x509.Name,
    usage: x509.ObjectIdentifier,
    san: x509.SubjectAlternativeName | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    ca_cert, ca_key = ca
    key = _key()
    builder = _builder(subject, ca_cert.subject, key.public_key())
    builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san is not None:
        builder = builder.add_extension(san, critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


KEY_USAGES = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)  # x509.KeyUsage's nine flags, each a required argument


def _key_usage(*uses: str) -> x509.KeyUsage:
    """A KeyUsage with `uses` set and every other flag off."""
    assert set(uses) <= set(KEY_USAGES), uses
    return x509.KeyUsage(**{flag: flag in uses for flag in KEY_USAGES})


def generate(folder: Path) -> Pki:
    """Create the CA, serving, admin-client and service-account material in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("trainyard-test-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage("digital_signature", "key_cert_sign", "crl_sign"), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    san = x509.SubjectAlternativeName(
        [x509.DNSName(name) for name in SERVING_DNS]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    )
    serving = _leaf((ca_cert, ca_key), _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, san)
    admin = _leaf((ca_cert, ca_key), _name("admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH)
    sa_key = _key()

    pki = Pki(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        admin_cert=folder / "admin.crt",
        admin_key=folder / "admin.key",
        sa_private_key=folder / "sa.key",
        sa_public_key=folder / "sa.pub",
    )
    _write_cert(pki.ca_cert, ca_cert)
    _write_cert(pki.serving_cert, serving[0])
    _write_key(pki.serving_key, serving[1])
    _write_cert(pki.admin_cert, admin[0])
    _write_key(pki.admin_key, admin[1])
    _write_key(pki.sa_private_key, sa_key)
    pki.sa_public_key.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
