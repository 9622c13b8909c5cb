// A throwaway certificate authority with a server certificate for 127.0.0.1 and a client
// certificate, made with the openssl CLI (for TLS tests of nats-server).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

const OPENSSL = "/usr/bin/openssl";

/** PEM file paths in the folder given to `createTestCertificates`. */
export interface TestCertificates {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** Whether `createTestCertificates` can run here (it needs /usr/bin/openssl). */
export const canCreateTestCertificates = (): boolean => existsSync(OPENSSL);

/** Writes the CA, `server.pem` (SAN IP:127.0.0.1, DNS:localhost) and `client.pem` (clientAuth) into `dir`; valid one day. */
export function createTestCertificates(dir: string): TestCertificates {
  const ssl = (args: string[], input?: string) =>
    execFileSync(OPENSSL, args, {
      cwd: dir,
      input,
      stdio: [input === undefined ? "ignore" : "pipe", "ignore", "ignore"],
    });
  const newKey = ["-newkey", "rsa:2048", "-nodes"];
  ssl(["req", "-x509", ...newKey, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=fleet-test-ca"]);
  for (const name of ["server", "client"]) {
    ssl(["req", ...newKey, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=fleet-${name}`]);
    ssl(
      [
        ...["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial"],
        ...["-out", `${name}.pem`, "-days", "1", "-extfile", "-"],
      ],
      name === "server" ? "subjectAltName=IP:127.0.0.1,DNS:localhost\n" : "extendedKeyUsage=clientAuth\n",
    );
  }
  const f = (name: string) => join(dir, name);
  return {
    ca: f("ca.pem"),
    serverCert: f("server.pem"),
    serverKey: f("server.key"),
    clientCert: f("client.pem"),
    clientKey: f("client.key"),
  };
}

/**
 * The nats-server `tls {}` block for the certificates; `verify`: clients must present a certificate.
 * The handshake may take 10 s (server default 2 s): test processes starting side by side on a busy
 * machine answer it late.
 */
export function natsTlsConfig(certs: TestCertificates, opts: { verify: boolean }): string {
  const q = JSON.stringify;
  return `tls { cert_file: ${q(certs.serverCert)}, key_file: ${q(certs.serverKey)}, ca_file: ${q(certs.ca)}, verify: ${opts.verify}, timeout: 10 }`;
}
