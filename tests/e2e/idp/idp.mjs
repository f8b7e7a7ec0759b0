// A real OAuth 2 authorization server on loopback for the OAuth e2e tests (oauth2-mock-server):
// its metadata, JWKS and /token endpoint are the library's own. It prints one JSON line with its
// issuer URL, then answers one JSON line per JSON line on stdin:
//   {"token": {"kid"?, "claims"?: {...}, "drop"?: [names], "expiresIn"?: s}}  -> {"token": "..."}
//   {"generate": {"alg": "ES256", "kid": "k2"}}                              -> {"jwk": {...}}
//   {"hs256": {"kid", "claims"}}: HS256 keyed with the RSA public key's PEM   -> {"token": "..."}
//   {"opaque": {"answer": {...}}}: a fresh opaque token whose introspection answers
//     {"active": true, "iss": <issuer>, ...answer} (answer.active: false for a revoked one) -> {"token": "..."}
//   {"stats": {}}: how many tokens /token issued, how many POST /introspect it answered
//     -> {"issued": n, "introspections": m}
//   {"stop": {}} / {"start": {}}: stops listening / listens again on the same port -> {"ok": true}
// A token its /token endpoint issues names the `resource` it was asked for as its audience
// (RFC 8707) and carries the `scope` asked for, as an IdP that honours resource indicators does;
// a client credentials token names the client as its subject (RFC 9068).
// Its POST /introspect (the library's own route and its beforeIntrospect hook) requires the
// resource server's client credentials by HTTP Basic (RFC 7662 §2.1) and answers for the opaque
// tokens made with "opaque"; any other token is inactive. The library's route does not read the
// form, so the listener reads it first and hands it to the hook on the request.
import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";
import { HttpServer, OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";
import { SignJWT, importJWK, exportSPKI } from "jose";

const RS_CLIENT = { id: "bernstein-rs", secret: "rs-secret:with&odd=chars" };
const issuer = new OAuth2Issuer();
const service = new OAuth2Service(issuer);
const handler = service.requestHandler;
const http = new HttpServer(async (req, res) => {
  if (req.method === "POST" && (req.url ?? "").split("?")[0] === "/introspect") {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    req.form = new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
  }
  handler(req, res);
});
const server = { issuer, service };
await server.issuer.keys.generate("RS256", { kid: "k-rs256" });
let issued = 0;
let introspections = 0;
const opaque = new Map();
service.on("beforeIntrospect", (response, req) => {
  introspections += 1;
  const basic = /^Basic (.+)$/i.exec(req.headers?.authorization ?? "");
  const [id, secret] = basic
    ? Buffer.from(basic[1], "base64").toString().split(":").map((p) => decodeURIComponent(p.replace(/\+/g, " ")))
    : [];
  if (id !== RS_CLIENT.id || secret !== RS_CLIENT.secret) {
    response.statusCode = 401;
    response.body = { error: "invalid_client" };
    return;
  }
  const form = req.form ?? new URLSearchParams();
  if (req.headers["content-type"] !== "application/x-www-form-urlencoded"
      || form.get("token_type_hint") !== "access_token") {
    response.statusCode = 400;
    response.body = { error: "invalid_request" };
    return;
  }
  response.body = opaque.get(form.get("token")) ?? { active: false };
});
service.on("beforeTokenSigning", (token, req) => {
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
await http.start(0, "127.0.0.1");
const port = http.address().port;
issuer.url = http.buildIssuerUrl("127.0.0.1", port);
process.stdout.write(JSON.stringify({ issuer: issuer.url }) + "\n");

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
  if (cmd.opaque) {
    const token = randomBytes(24).toString("base64url");
    opaque.set(token, { active: true, iss: issuer.url, ...cmd.opaque.answer });
    return { token };
  }
  if (cmd.stats) {
    return { issued, introspections };
  }
  if (cmd.stop) {
    await http.stop();
    return { ok: true };
  }
  if (cmd.start) {
    await http.start(port, "127.0.0.1");
    return { ok: true };
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
if (http.listening) await http.stop();
