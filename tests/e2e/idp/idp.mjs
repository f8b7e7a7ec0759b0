// A real OAuth 2 authorization server on loopback for the OAuth e2e tests (oauth2-mock-server):
// its metadata, JWKS and /token endpoint are the library's own. It prints one JSON line with its
// issuer URL, then answers one JSON line per JSON line on stdin:
//   {"token": {"kid"?, "claims"?: {...}, "drop"?: [names], "expiresIn"?: s}}  -> {"token": "..."}
//   {"generate": {"alg": "ES256", "kid": "k2"}}                              -> {"jwk": {...}}
//   {"hs256": {"kid", "claims"}}: HS256 keyed with the RSA public key's PEM   -> {"token": "..."}
//   {"stats": {}}: how many tokens its /token endpoint issued                 -> {"issued": n}
// A token its /token endpoint issues names the `resource` it was asked for as its audience
// (RFC 8707) and carries the `scope` asked for, as an IdP that honours resource indicators does;
// a client credentials token names the client as its subject (RFC 9068).
import { createInterface } from "node:readline";
import { OAuth2Server } from "oauth2-mock-server";
import { SignJWT, importJWK, exportSPKI } from "jose";

const server = new OAuth2Server();
await server.issuer.keys.generate("RS256", { kid: "k-rs256" });
let issued = 0;
server.service.on("beforeTokenSigning", (token, req) => {
  const body = req.body ?? {};
  if (body.resource) token.payload.aud = body.resource;
  if (body.scope) token.payload.scope = body.scope;
  // RFC 9068: a client credentials token's subject is the client (from HTTP Basic).
  const basic = /^Basic (.+)$/i.exec(req.headers?.authorization ?? "");
  if (body.grant_type === "client_credentials" && basic) {
    const id = decodeURIComponent(Buffer.from(basic[1], "base64").toString().split(":")[0]);
    token.payload.client_id = id;
    token.payload.sub ??= id;
  }
  issued += 1;
});
await server.start(0, "127.0.0.1");
process.stdout.write(JSON.stringify({ issuer: server.issuer.url }) + "\n");

async function handle(cmd) {
  if (cmd.token) {
    const { kid, claims = {}, drop = [], expiresIn = 600 } = cmd.token;
    const token = await server.issuer.buildToken({
      kid,
      expiresIn,
      scopesOrTransform: (_header, payload) => {
        Object.assign(payload, claims);
        for (const name of drop) delete payload[name];
      },
    });
    return { token };
  }
  if (cmd.generate) {
    const { alg, kid } = cmd.generate;
    const opts = alg === "EdDSA" ? { kid, crv: "Ed25519" } : { kid };
    const jwk = await server.issuer.keys.generate(alg, opts);
    return { jwk: { kid: jwk.kid, alg: jwk.alg } };
  }
  if (cmd.hs256) {
    const { kid, claims } = cmd.hs256;
    const pub = server.issuer.keys.get(kid);
    const pem = await exportSPKI(await importJWK({ kty: pub.kty, n: pub.n, e: pub.e }, "RS256"));
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", kid })
      .sign(new TextEncoder().encode(pem));
    return { token };
  }
  if (cmd.stats) {
    return { issued };
  }
  return { error: "unknown command" };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  let out;
  try {
    out = await handle(JSON.parse(line));
  } catch (e) {
    out = { error: String(e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
await server.stop();
