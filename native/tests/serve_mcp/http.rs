//! MCP at `/mcp` on `okfit serve`: the tools a credential grants, the
//! tenant it names, Host and Origin checks, revision 2026-07-28 without a
//! session and older revisions with one, and the same answers as the
//! stdio server on the same tenant.

use super::*;

/// The revision served without sessions.
const STATELESS: &str = "2026-07-28";

/// One JSON-RPC request to `path` at revision 2026-07-28 (no session,
/// the per-request headers and `_meta` it asks for); `extra` headers
/// replace the defaults of the same name.
fn rpc(
    d: &Daemon,
    path: &str,
    token: Option<&str>,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> Resp {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut h: Vec<(String, String)> = vec![
        ("Host".into(), "127.0.0.1".into()),
        ("Content-Type".into(), "application/json".into()),
        (
            "Accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("MCP-Protocol-Version".into(), STATELESS.into()),
        ("Mcp-Method".into(), method.into()),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        h.push(("Mcp-Name".into(), name.into()));
    }
    if let Some(t) = token {
        h.push(("Authorization".into(), bearer(t)));
    }
    for (k, v) in extra {
        h.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
        h.push((k.to_string(), v.to_string()));
    }
    let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    d.req("POST", path, &h, body.to_string().as_bytes())
}

/// The tool names `tools/list` gives `token`.
fn tool_names(d: &Daemon, token: &str) -> Vec<String> {
    let r = rpc(d, "/mcp", Some(token), "tools/list", json!({}), &[]);
    r.expect_status(200);
    r.json()["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {}", r.text()))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A tool call's result: (isError, its text).
fn call(d: &Daemon, token: &str, name: &str, args: Value) -> (bool, String) {
    let r = rpc(
        d,
        "/mcp",
        Some(token),
        "tools/call",
        json!({"name": name, "arguments": args}),
        &[],
    );
    r.expect_status(200);
    let v = r.json();
    let result = &v["result"];
    assert!(result.is_object(), "{name}: no result in {v}");
    (
        result["isError"] == json!(true),
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no text in {v}"))
            .to_string(),
    )
}

#[test]
fn mcp_over_http_offers_what_the_token_grants_on_its_tenant_only() {
    let sb = Sandbox::new();
    sb.acme();
    let reader = sb.mint("acme", false);
    let writer = sb.mint("acme", true);
    let keeper = sb.mint_with("acme", &["--write", "--database"]);
    let auditor = sb.mint_with("acme", &["--database"]);
    let stranger = sb.mint("other", true);
    let d = sb.serve_tcp("127.0.0.1", &[]);

    let read = ["manifest", "search", "get", "snapshot"];
    let write = [&read[..], &["write", "delete"]].concat();
    let all = [&write[..], &["transact", "history", "restore"]].concat();
    assert_eq!(tool_names(&d, &reader), read);
    assert_eq!(tool_names(&d, &writer), write);
    assert_eq!(tool_names(&d, &keeper), all);
    assert_eq!(tool_names(&d, &auditor), [&read[..], &["history"]].concat());

    // A tool the grant lacks is not there to call.
    let r = rpc(
        &d,
        "/mcp",
        Some(&reader),
        "tools/call",
        json!({"name": "write", "arguments": {"bundle": "ops", "path": "x.md", "content": "# X\n"}}),
        &[],
    );
    assert_eq!(r.json()["error"]["code"], json!(-32602), "{}", r.text());
    assert!(r.text().contains("tool not found: write"), "{}", r.text());

    // Missing or unknown credentials: 401 with the scheme to use.
    for t in [None, Some("0123")] {
        let r = rpc(&d, "/mcp", t, "tools/list", json!({}), &[]);
        r.expect(401, "invalid or missing bearer token");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    // The token names the tenant; a path naming another is refused, the
    // token's own tenant in the path is the same server.
    rpc(
        &d,
        "/mcp/acme",
        Some(&stranger),
        "tools/list",
        json!({}),
        &[],
    )
    .expect(403, "token does not grant access to that tenant");
    let (e, stranger_manifest) = call(&d, &stranger, "manifest", json!({}));
    assert!(e, "{stranger_manifest}");
    assert!(
        stranger_manifest.contains("no tenant \"other\""),
        "{stranger_manifest}"
    );
    let (e, m) = call(&d, &reader, "manifest", json!({}));
    assert!(!e, "{m}");
    assert!(m.starts_with("# tenant: acme\n"), "{m}");
    let pathed = rpc(
        &d,
        "/mcp/acme",
        Some(&reader),
        "tools/call",
        json!({"name": "manifest", "arguments": {}}),
        &[],
    );
    assert_eq!(pathed.json()["result"]["content"][0]["text"], json!(m));

    // DNS rebinding and cross-site pages: another Host or Origin is 403.
    rpc(
        &d,
        "/mcp",
        Some(&reader),
        "tools/list",
        json!({}),
        &[("Host", "evil.example")],
    )
    .expect_status(403);
    rpc(
        &d,
        "/mcp",
        Some(&reader),
        "tools/list",
        json!({}),
        &[("Origin", "http://evil.example")],
    )
    .expect_status(403);

    // A write through MCP is what the next read sees, on any connection.
    let (e, w) = call(
        &d,
        &writer,
        "write",
        json!({"bundle": "ops", "path": "notes/mcp.md", "content": concept("Over HTTP", "Written through MCP over HTTP.")}),
    );
    assert!(!e, "{w}");
    assert!(w.starts_with("wrote ops/notes/mcp.md"), "{w}");
    let (_, hits) = call(&d, &reader, "search", json!({"query": "written through"}));
    assert!(hits.contains("\nmcp\tops\t"), "{hits}");
    let (e, h) = call(&d, &keeper, "history", json!({"limit": 1}));
    assert!(!e, "{h}");
}

#[test]
fn older_revisions_get_a_session_and_2026_07_28_needs_none() {
    let sb = Sandbox::new();
    sb.acme();
    let reader = sb.mint("acme", false);
    let d = sb.serve_tcp("127.0.0.1", &[]);
    let auth = bearer(&reader);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "okfit-test", "version": "0"}}});
    let r = d.req(
        "POST",
        "/mcp",
        &[
            ("Host", "localhost"),
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        init.to_string().as_bytes(),
    );
    r.expect_status(200);
    assert!(r.header("mcp-session-id").is_some(), "{:?}", r.headers);
    assert!(
        r.text().contains("\"protocolVersion\":\"2025-06-18\""),
        "{}",
        r.text()
    );

    let r = rpc(
        &d,
        "/mcp",
        Some(&reader),
        "tools/call",
        json!({"name": "snapshot", "arguments": {}}),
        &[],
    );
    r.expect_status(200);
    assert_eq!(r.header("mcp-session-id"), None);
    assert!(r
        .header("content-type")
        .unwrap_or("")
        .starts_with("application/json"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_read_tool_answers_over_http_as_over_stdio() {
    let sb = Sandbox::new();
    sb.acme();
    let token = sb.mint_with("acme", &["--database"]);
    let d = sb.serve_tcp("127.0.0.1", &[]);
    let dsn = sb.store_dsn("acme");
    let stdio = mcp_connect(&sb, &[&dsn, "--database-tools", "--read-only"]).await;
    let manifest = text(&stdio, "manifest", json!({})).await;
    let ids: Vec<&str> = manifest
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("id\t"))
        .filter_map(|l| l.split('\t').next())
        .take(3)
        .collect();
    assert_eq!(ids.len(), 3, "{manifest}");
    let calls = [
        ("manifest", json!({})),
        ("manifest", json!({"bundle": "sales"})),
        ("search", json!({"query": "orders customers", "k": 5})),
        ("search", json!({"query": "zzzz-nothing"})),
        ("get", json!({"ids": ids})),
        ("get", json!({"ids": [ids[0]], "limit": 40})),
        ("get", json!({"ids": ["no/such"]})),
        ("snapshot", json!({})),
        ("history", json!({"limit": 5})),
    ];
    for (name, args) in calls {
        let want = call_raw(&stdio, name, args.clone()).await;
        let (want_error, want_text) = result_text(&want);
        let (is_error, got) = call(&d, &token, name, args.clone());
        assert_eq!(
            (is_error, got.as_str()),
            (want_error, want_text.as_str()),
            "{name} {args}"
        );
    }
    let over_stdio: Vec<Value> = stdio
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    let r = rpc(&d, "/mcp", Some(&token), "tools/list", json!({}), &[]);
    assert_eq!(r.json()["result"]["tools"], json!(over_stdio));
    stdio.cancel().await.unwrap();
}

/// An ES256 signing key, its JWKS (key id `k1`) and a way to sign claims.
struct Issuer {
    pem: String,
    jwks: Value,
}

impl Issuer {
    fn new(kid: &str) -> Issuer {
        use base64::Engine;
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let point = key.public_key_raw();
        assert_eq!(
            (point.len(), point[0]),
            (65, 4),
            "an uncompressed P-256 point"
        );
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        Issuer {
            pem: key.serialize_pem(),
            jwks: json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256",
                "use": "sig", "x": b64(&point[1..33]), "y": b64(&point[33..])}]}),
        }
    }

    /// A token signed with key id `kid` carrying `claims`.
    fn sign(&self, kid: &str, claims: Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some(kid.into());
        let key = jsonwebtoken::EncodingKey::from_ec_pem(self.pem.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }
}

#[test]
fn access_tokens_from_the_configured_issuer_grant_by_scope() {
    const ISSUER: &str = "https://issuer.example";
    const RESOURCE: &str = "https://kb.example/mcp";
    const METADATA: &str = "https://kb.example/.well-known/oauth-protected-resource/mcp";
    let sb = Sandbox::new();
    sb.acme();
    let issuer = Issuer::new("k1");
    let jwks = sb.write("jwks.json", issuer.jwks.to_string());
    let jwks = jwks.display().to_string();
    // No tokens.json: the issuer's tokens are credentials enough for TCP.
    let d = sb.serve_tcp(
        "127.0.0.1",
        &[
            "--oauth-issuer",
            ISSUER,
            "--jwks",
            &jwks,
            "--audience",
            RESOURCE,
        ],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |scope: &str, changes: Value| {
        let mut claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "agent-7",
            "exp": now + 600, "scope": scope, "okfit_tenant": "acme"});
        for (k, v) in changes.as_object().unwrap() {
            claims[k] = v.clone();
        }
        issuer.sign("k1", claims)
    };

    // The metadata document, at the root and under the resource's path.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let m = d.req("GET", path, &[], b"");
        m.expect_status(200);
        assert_eq!(
            m.json(),
            json!({"resource": RESOURCE, "authorization_servers": [ISSUER],
                "scopes_supported": ["okfit:read", "okfit:write", "okfit:database"],
                "bearer_methods_supported": ["header"]})
        );
    }
    // No token: 401 naming the metadata.
    let r = rpc(&d, "/mcp", None, "tools/list", json!({}), &[]);
    r.expect_status(401);
    assert_eq!(
        r.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{METADATA}\", error=\"invalid_token\"").as_str())
    );

    // Scopes pick the tools.
    let read = ["manifest", "search", "get", "snapshot"];
    assert_eq!(tool_names(&d, &token("okfit:read", json!({}))), read);
    assert_eq!(
        tool_names(&d, &token("okfit:write okfit:database", json!({}))),
        [
            &read[..],
            &["write", "delete", "transact", "history", "restore"]
        ]
        .concat()
    );
    let (e, m) = call(&d, &token("okfit:read", json!({})), "manifest", json!({}));
    assert!(!e && m.starts_with("# tenant: acme\n"), "{m}");

    // Each check refuses on its own: audience, issuer, expiry, key,
    // signature, tenant.
    let other = Issuer::new("k1");
    let refused = [
        (
            "another audience",
            token("okfit:read", json!({"aud": "https://other.example/mcp"})),
        ),
        (
            "another issuer",
            token("okfit:read", json!({"iss": "https://evil.example"})),
        ),
        ("expired", token("okfit:read", json!({"exp": now - 3600}))),
        (
            "unknown key",
            issuer.sign(
                "k2",
                json!({"iss": ISSUER, "aud": RESOURCE,
            "exp": now + 600, "scope": "okfit:read", "okfit_tenant": "acme"}),
            ),
        ),
        (
            "forged",
            other.sign(
                "k1",
                json!({"iss": ISSUER, "aud": RESOURCE,
            "exp": now + 600, "scope": "okfit:read", "okfit_tenant": "acme"}),
            ),
        ),
        (
            "no tenant",
            token("okfit:read", json!({"okfit_tenant": null})),
        ),
    ];
    for (why, t) in refused {
        let r = rpc(&d, "/mcp", Some(&t), "tools/list", json!({}), &[]);
        assert_eq!(r.status, 401, "{why}: {}", r.text());
        assert!(
            r.header("www-authenticate")
                .unwrap_or("")
                .contains(METADATA),
            "{why}: {:?}",
            r.headers
        );
    }
    // Valid, but no okfit scope: 403 insufficient_scope.
    let r = rpc(
        &d,
        "/mcp",
        Some(&token("profile", json!({}))),
        "tools/list",
        json!({}),
        &[],
    );
    r.expect_status(403);
    assert!(
        r.header("www-authenticate")
            .unwrap_or("")
            .contains("error=\"insufficient_scope\""),
        "{:?}",
        r.headers
    );
    // Another tenant in the path than the token names: 403.
    rpc(
        &d,
        "/mcp/other",
        Some(&token("okfit:read", json!({}))),
        "tools/list",
        json!({}),
        &[],
    )
    .expect(403, "token does not grant access to that tenant");
}

#[test]
fn without_an_issuer_no_metadata_is_advertised() {
    let sb = Sandbox::new();
    sb.acme();
    let _reader = sb.mint("acme", false);
    let d = sb.serve_tcp("127.0.0.1", &[]);
    d.req("GET", "/.well-known/oauth-protected-resource", &[], b"")
        .expect(404, "no authorization server is configured");
    let r = rpc(&d, "/mcp", None, "tools/list", json!({}), &[]);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
}

#[test]
fn a_credential_past_its_rate_waits_and_only_allowed_origins_get_cors() {
    let sb = Sandbox::new();
    sb.acme();
    let busy = sb.mint("acme", false);
    let calm = sb.mint("acme", false);
    let page = sb.mint("acme", false);
    let d = sb.serve_tcp(
        "127.0.0.1",
        &[
            "--rate-limit",
            "1",
            "--allowed-origin",
            "https://app.example:443",
        ],
    );
    // One a second, two in a burst: a run of ten meets the limit (only a
    // run slower than eight seconds would not).
    let answers: Vec<Resp> = (0..10)
        .map(|_| rpc(&d, "/mcp", Some(&busy), "tools/list", json!({}), &[]))
        .collect();
    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert!((2..10).contains(&ok), "{ok} of 10 admitted");
    assert!(
        answers.iter().all(|r| r.status == 200 || r.status == 429),
        "{answers:?}"
    );
    let limited = answers
        .iter()
        .find(|r| r.status == 429)
        .expect("a request past the limit");
    let wait: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    // Another credential has its own budget.
    rpc(&d, "/mcp", Some(&calm), "tools/list", json!({}), &[]).expect_status(200);

    // CORS: a preflight from the allowed page is answered without a
    // credential; its requests carry the CORS headers; any other page
    // gets 403 and none.
    let pre = d.req(
        "OPTIONS",
        "/mcp",
        &[
            ("Host", "127.0.0.1"),
            ("Origin", "https://app.example"),
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "authorization, content-type, mcp-protocol-version",
            ),
        ],
        b"",
    );
    let allowed = |r: &Resp| {
        r.expect_status(200);
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("https://app.example")
        );
    };
    allowed(&pre);
    let allowed_methods = pre.header("access-control-allow-methods").unwrap_or("");
    assert!(allowed_methods.contains("POST"), "{allowed_methods}");
    let from = |origin: &str| {
        rpc(
            &d,
            "/mcp",
            Some(&page),
            "tools/list",
            json!({}),
            &[("Origin", origin)],
        )
    };
    let r = from("https://app.example");
    allowed(&r);
    let exposed = r.header("access-control-expose-headers").unwrap_or("");
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    let r = from("https://evil.example");
    r.expect_status(403);
    assert_eq!(r.header("access-control-allow-origin"), None);
}
