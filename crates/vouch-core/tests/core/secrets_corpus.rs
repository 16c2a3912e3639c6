//! The secret scan's corpus (vouch_core::secrets, docs/secrets.md): true
//! secrets — fake but well-formed, in the files they are found in (`.env`,
//! YAML, JSON, code, shell) — that must be found with their kind and exact
//! span, and look-alikes that must pass (hashes, git ids, UUIDs, base64 in
//! code, lock-file checksums, public keys, placeholders, references, code
//! that reads a secret from elsewhere, prose). Precision and recall over
//! the corpus are printed (`--nocapture`).
//!
//! No token is written out whole in this file: each is assembled when the
//! test runs (`fake`, `concat!`), so that no scanner reading the
//! repository takes the corpus for a leak.

use proptest::prelude::*;
use vouch_core::secrets::{Finding, mask, mask_of, scan};

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const HEX: &[u8] = b"0123456789abcdef";

/// `prefix` and `len` characters of `alphabet`, drawn from a fixed seed:
/// a well-formed token that was never anyone's.
fn fake(prefix: &str, alphabet: &[u8], len: usize, seed: u64) -> String {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = prefix.to_string();
    for _ in 0..len {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push(alphabet[(state >> 33) as usize % alphabet.len()] as char);
    }
    out
}

/// A PEM block of `label` with a fake body of `lines` lines.
fn pem(label: &str, lines: usize, seed: u64, newline: &str) -> String {
    let mut block = format!("-----BEGIN {label}-----{newline}");
    for i in 0..lines {
        block.push_str(&fake("", BASE64, 64, seed + i as u64));
        block.push_str(newline);
    }
    block.push_str(&fake("", BASE64, 20, seed + 99));
    block.push_str(&format!("=={newline}-----END {label}-----"));
    block
}

/// A text holding secrets, each named by its kind and its exact bytes.
pub(crate) struct Positive {
    pub(crate) name: &'static str,
    pub(crate) text: String,
    pub(crate) secrets: Vec<(&'static str, String)>,
}

fn positive(name: &'static str, kind: &'static str, secret: String, line: String) -> Positive {
    Positive {
        name,
        text: line.replace("{}", &secret),
        secrets: vec![(kind, secret)],
    }
}

pub(crate) fn positives() -> Vec<Positive> {
    let private = concat!("PRIVATE", " KEY");
    let rsa = pem(&format!("RSA {private}"), 6, 1, "\n");
    let openssh = pem(&format!("OPENSSH {private}"), 4, 2, "\n");
    let pkcs8_json = pem(private, 5, 3, "\\n");
    let pgp = pem(&format!("PGP {private} BLOCK"), 3, 4, "\n");
    let cut_off = {
        let whole = pem(&format!("EC {private}"), 3, 5, "\n");
        whole[..whole.find("==").expect("padding")].to_string()
    };
    let jwt = concat!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
        ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    )
    .to_string();
    let aws_key = concat!("AKIA", "IOSFODNN7EXAMPLE").to_string();
    let aws_secret = concat!("wJalrXUtnFEMI/K7MDENG", "/bPxRfiCYEXAMPLEKEY").to_string();
    vec![
        positive("RSA private key in a file", "private_key", rsa, "# deploy key\n{}\n".into()),
        positive("OpenSSH private key", "private_key", openssh, "{}\n".into()),
        positive(
            "PKCS#8 key in a service-account JSON",
            "private_key",
            pkcs8_json,
            "{\n  \"type\": \"service_account\",\n  \"private_key\": \"{}\\n\",\n}".into(),
        ),
        positive("PGP private key block", "private_key", pgp, "{}\n".into()),
        positive("private key cut off before its END line", "private_key", cut_off, "{}".into()),
        positive(
            "AWS access key id in .env",
            "aws_access_key_id",
            aws_key.clone(),
            "AWS_ACCESS_KEY_ID={}\n".into(),
        ),
        positive(
            "AWS session key id in YAML",
            "aws_access_key_id",
            fake("ASIA", UPPER_ALNUM, 16, 10),
            "credentials:\n  key: {}\n".into(),
        ),
        positive(
            "AWS secret access key in credentials file",
            "aws_secret_access_key",
            aws_secret,
            "[default]\naws_secret_access_key={}\n".into(),
        ),
        positive(
            "GitHub personal access token in a shell line",
            "github_token",
            fake("ghp_", ALNUM, 36, 11),
            "export GITHUB_TOKEN={}\n".into(),
        ),
        positive(
            "GitHub OAuth token in JSON",
            "github_token",
            fake("gho_", ALNUM, 36, 12),
            "{\"token\": \"{}\"}".into(),
        ),
        positive(
            "GitHub fine-grained token",
            "github_token",
            format!("{}_{}", fake("github_pat_", ALNUM, 22, 13), fake("", ALNUM, 59, 14)),
            "token = \"{}\"".into(),
        ),
        positive(
            "GitHub token inside a password assignment",
            "github_token",
            fake("ghs_", ALNUM, 36, 15),
            "password = \"{}\"".into(),
        ),
        positive(
            "GitLab token",
            "gitlab_token",
            fake("glpat-", URL_SAFE, 20, 16),
            "GITLAB_TOKEN: {}".into(),
        ),
        positive(
            "Slack bot token",
            "slack_token",
            format!("xoxb-{}-{}-{}", fake("", b"0123456789", 12, 17), fake("", b"0123456789", 13, 18), fake("", ALNUM, 24, 19)),
            "slack:\n  token: {}\n".into(),
        ),
        positive(
            "Slack webhook",
            "slack_webhook",
            format!(
                "https://hooks.slack.com/services/{}/{}/{}",
                fake("T", UPPER_ALNUM, 8, 20),
                fake("B", UPPER_ALNUM, 10, 21),
                fake("", ALNUM, 24, 22)
            ),
            "webhook_url: {}\n".into(),
        ),
        positive(
            "Stripe live secret key",
            "stripe_key",
            fake(concat!("sk_", "live_"), ALNUM, 24, 23),
            "STRIPE_KEY={}".into(),
        ),
        positive(
            "Google API key in JavaScript",
            "google_api_key",
            fake("AIza", URL_SAFE, 35, 24),
            "const maps = new Maps({ key: '{}' });".into(),
        ),
        positive(
            "OpenAI project key",
            "openai_api_key",
            fake("sk-proj-", URL_SAFE, 64, 25),
            "OPENAI_API_KEY={}".into(),
        ),
        positive(
            "OpenAI legacy key",
            "openai_api_key",
            format!("{}{}{}", fake("sk-", ALNUM, 20, 26), concat!("T3Blbk", "FJ"), fake("", ALNUM, 20, 27)),
            "openai.api_key = \"{}\"".into(),
        ),
        positive(
            "Anthropic key",
            "anthropic_api_key",
            fake("sk-ant-api03-", URL_SAFE, 93, 28),
            "ANTHROPIC_API_KEY={}\n".into(),
        ),
        positive(
            "npm token in .npmrc",
            "npm_token",
            fake("npm_", ALNUM, 36, 29),
            "//registry.npmjs.org/:_authToken={}\n".into(),
        ),
        positive(
            "PyPI token",
            "pypi_token",
            fake(concat!("pypi-AgEIcHl", "waS5vcmc"), URL_SAFE, 70, 30),
            "[pypi]\npassword = {}\n".into(),
        ),
        positive(
            "Hugging Face token",
            "huggingface_token",
            fake("hf_", b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34, 31),
            "HF_TOKEN={}".into(),
        ),
        positive(
            "SendGrid key",
            "sendgrid_api_key",
            format!("{}.{}", fake("SG.", URL_SAFE, 22, 32), fake("", URL_SAFE, 43, 33)),
            "SENDGRID_API_KEY='{}'".into(),
        ),
        positive(
            "Azure storage connection string",
            "azure_storage_key",
            format!("{}==", fake("", BASE64, 86, 34)),
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={};EndpointSuffix=core.windows.net"
                .into(),
        ),
        positive(
            "JWT as a bearer token in curl",
            "jwt",
            jwt.clone(),
            "curl -H \"Authorization: Bearer {}\" https://api.internal/v1/me".into(),
        ),
        positive("JWT in a cookie", "jwt", jwt, "Cookie: session={}; Path=/".into()),
        positive(
            "opaque bearer token",
            "bearer_token",
            fake("", HEX, 40, 35),
            "Authorization: Bearer {}\n".into(),
        ),
        positive(
            "Basic credentials",
            "basic_auth",
            "YWxpY2U6czNjcjN0LXBhc3M=".into(),
            "Authorization: Basic {}".into(),
        ),
        positive(
            "password in .env",
            "password_assignment",
            "Tr0ub4dor&3".into(),
            "DB_HOST=db\nDB_PASSWORD={}\n".into(),
        ),
        positive(
            "password in YAML",
            "password_assignment",
            "hunter2!x".into(),
            "database:\n  user: app\n  password: \"{}\"\n".into(),
        ),
        positive(
            "password in JSON",
            "password_assignment",
            "c0rrect-h0rse".into(),
            "{\"user\": \"app\", \"password\": \"{}\"}".into(),
        ),
        positive(
            "password in Python",
            "password_assignment",
            "S3cr3tP@ss".into(),
            "PASSWORD = '{}'\n".into(),
        ),
        positive(
            "password in a PHP array",
            "password_assignment",
            "pa55w0rd!".into(),
            "$db = ['user' => 'app', 'password' => '{}'];".into(),
        ),
        positive(
            "client secret in YAML",
            "secret_assignment",
            fake("", HEX, 24, 36),
            "oauth:\n  client_secret: {}\n".into(),
        ),
        positive(
            "API key in TOML",
            "api_key_assignment",
            fake("", ALNUM, 32, 37),
            "[service]\napi_key = \"{}\"\n".into(),
        ),
        positive(
            "access token in a URL query",
            "token_assignment",
            fake("", ALNUM, 28, 38),
            "https://api.example.com/v1/items?access_token={}&page=2".into(),
        ),
        positive(
            "password in a Postgres URL",
            "connection_string_password",
            "Zq8vN2pLx7".into(),
            "DATABASE_URL=postgres://app:{}@db.internal:5432/app".into(),
        ),
        positive(
            "password in a MongoDB URL",
            "connection_string_password",
            "Kx9mQ2wZ".into(),
            "mongodb+srv://admin:{}@cluster0.abcde.mongodb.net/test".into(),
        ),
        positive(
            "password in a Redis URL with no user",
            "connection_string_password",
            "r3d1sP4ss".into(),
            "REDIS_URL=redis://:{}@cache:6379/0".into(),
        ),
        Positive {
            name: "two secrets on two lines",
            text: format!("id: {aws_key}\npassword: \"W1nter-2026!\"\n"),
            secrets: vec![
                ("aws_access_key_id", aws_key),
                ("password_assignment", "W1nter-2026!".into()),
            ],
        },
    ]
}

/// Secrets the scan misses on purpose (precision first, docs/secrets.md):
/// a plain word as a password, a secret with no name or shape, a scheme
/// the rules do not know. They count against recall.
pub(crate) fn misses_by_design() -> Vec<Positive> {
    vec![
        positive(
            "a plain word as a password",
            "password_assignment",
            "letmein".into(),
            "password: {}".into(),
        ),
        positive(
            "a random string with no name",
            "generic",
            fake("", ALNUM, 24, 40),
            "const K = \"{}\";".into(),
        ),
        positive(
            "a token under a scheme the rules do not know",
            "generic",
            fake("", HEX, 40, 41),
            "Authorization: Token {}".into(),
        ),
    ]
}

/// Look-alikes that must pass.
fn negatives() -> Vec<(&'static str, String)> {
    let public = pem("PUBLIC KEY", 4, 50, "\n");
    let certificate = pem("CERTIFICATE", 6, 51, "\n");
    vec![
        ("sha256 digests", format!("sha256 {}\n{}  file.tar.gz", fake("", HEX, 64, 52), fake("", HEX, 64, 53))),
        ("git commit ids", format!("commit {}\nMerge: {} {}", fake("", HEX, 40, 54), &fake("", HEX, 40, 55)[..7], &fake("", HEX, 40, 56)[..7])),
        ("UUIDs", "id: 123e4567-e89b-12d3-a456-426614174000\nrequest_id=f47ac10b-58cc-4372-a567-0e02b2c3d479".into()),
        ("a Cargo.lock entry", format!("[[package]]\nname = \"regex\"\nversion = \"1.13.2\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"", fake("", HEX, 64, 57))),
        ("an npm integrity hash", format!("\"integrity\": \"sha512-{}==\"", fake("", BASE64, 86, 58))),
        ("a docker image digest", format!("image: nginx@sha256:{}", fake("", HEX, 64, 59))),
        ("base64 PNG in code", "const ICON: &str = \"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\";".into()),
        ("a base64 blob in a Rust const", format!("const SEED: &str = \"{}==\";", fake("", BASE64, 120, 60))),
        ("a data URL", format!("<img src=\"data:image/png;base64,{}=\">", fake("", BASE64, 200, 61))),
        ("an SSH public key", format!("ssh-ed25519 {} alice@laptop\nssh-rsa AAAAB3NzaC1yc2E{} bob@host", fake("AAAAC3NzaC1lZDI1NTE5AAAAI", BASE64, 43, 62), fake("", BASE64, 300, 63))),
        ("a PEM public key", public),
        ("a PEM certificate", certificate),
        ("a private key's shape in documentation", concat!("-----BEGIN RSA PRIVATE", " KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE", " KEY-----").into()),
        ("a private key header named in prose", concat!("The file starts with -----BEGIN OPENSSH PRIVATE", " KEY----- and must stay out of git.").into()),
        ("an empty password", "password = \"\"\nPASSWORD=\n".into()),
        ("an environment reference", "api_key: ${API_KEY}\npassword: $DB_PASSWORD\nsecret: %(secret)s".into()),
        ("placeholders", "password: <your password>\nPASSWORD=changeme\napi_key = \"YOUR_API_KEY_HERE\"\npassword: \"********\"\nclient_secret: xxxxxxxxxxxxxxxx".into()),
        ("templates", "client_secret: \"{{ .Values.clientSecret }}\"\ntoken: ${{ secrets.GITHUB_TOKEN }}\npassword: !vault |".into()),
        ("code that reads a secret", "api_key = os.environ[\"API_KEY\"]\npassword = getpass.getpass()\nSECRET_KEY = os.getenv(\"SECRET_KEY\")\npassword = input(\"Password: \")\nlet api_key = config.api_key.clone();\npassword: this.password,\npassword=args.password\npub password: windows_sys::core::PCWSTR,\npub secret: _bindgen_ty_3,\n/// `password: :pw_gecos`".into()),
        ("declarations", "struct Login {\n    password: String,\n    api_key: Option<String>,\n}\nfn password(&self) -> &str\ndef login(username, password=None):\ninterface L { password?: string; }\ntype Creds struct { Password string `json:\"password\"` }".into()),
        ("names that are no secret", "password_hash = \"$2b$12$KIXQJqcfe0Q9hQe2ZxS0re\"\npassword_min_length = 12\nmax_tokens = 4096\nsecretName: db-credentials\nsecret: tls-secret-2\nPASSWORD_REGEX = \"^(?=.*[A-Z]).{8,}$\"\n\"auth_token\": null\npassword=password\napi_key=API_KEY\n\"password\": {\"type\": \"string\"}".into()),
        ("prose", "Passwords must be at least 12 characters. Set api_key to your key, then send the bearer token in the header. Password: required. The secret: keep it out of git.".into()),
        ("bearer placeholders", "Authorization: Bearer <token>\nAuthorization: Bearer $TOKEN\nAuthorization: Bearer YOUR_ACCESS_TOKEN\n\"token_type\": \"Bearer\", \"expires_in\": 3600\nAuthorization: Basic <credentials>".into()),
        ("URLs without a password", "https://github.com/org/repo\ngit@github.com:org/repo.git\nhttp://localhost:8080/path\nhttps://alice@example.com/x\nredis://localhost:6379/0\nhttps://example.com/?page_token=CiAKGjBpNDd2Nmp2Zml2".into()),
        ("URLs with placeholder passwords", "postgres://user:password@localhost/db\npostgres://postgres:postgres@localhost:5432/test\npostgres://${DB_USER}:${DB_PASS}@db/app\namqp://guest:guest@rabbit:5672\nhttps://host:8443@proxy\nhttp://user:pass@proxy.local\nhttps://user:xyz@sub.example.com\ncvs://:pserver:anoncvs@sources.redhat.com:/cvs/src".into()),
        ("Stripe's published test key and an IAM unique id", format!("{}\nUserId: AIDA{}", fake(concat!("sk_", "test_"), ALNUM, 24, 64), fake("", UPPER_ALNUM, 17, 65))),
        ("not a JWT: the header is no JSON", format!("eyJub3RqdXN0Ijo.{}.{}", "eyJzdWIiOiIxMjM0NTY3ODkwIn0", fake("", URL_SAFE, 30, 66))),
        ("words that start like tokens", "pip install sk-learn\nfrom huggingface_hub import hf_hub_download\nxoxo-hugs\nSG.total = 3\nnpm_config_cache=/tmp/npm".into()),
        ("version numbers, addresses, mail", "version 1.2.3 at 10.0.0.1:8080, mail alice@example.com, mailto:bob@example.org".into()),
        ("a masked source", format!("{} and password = \"{}\" and {}", mask_of("aws_access_key_id"), mask_of("password_assignment"), mask_of("private_key"))),
    ]
}

/// Where `secret` is in `text`: (start, end).
fn span_of(text: &str, secret: &str) -> (usize, usize) {
    let start = text.find(secret).expect("the secret is in its text");
    (start, start + secret.len())
}

fn found(findings: &[Finding], kind: &str, span: (usize, usize)) -> bool {
    findings
        .iter()
        .any(|f| f.kind == kind && (f.start, f.end) == span)
}

// The figures are the test's report, printed by the harness with
// `--nocapture`; the library itself never prints.
#[allow(clippy::disallowed_macros)]
#[test]
fn the_corpus_is_scanned_with_full_precision_and_its_recall_is_printed() {
    let mut true_positives = 0;
    let mut false_negatives = Vec::new();
    let mut false_positives = Vec::new();
    let must = positives();
    let misses = misses_by_design();
    for (sample, by_design) in must
        .iter()
        .map(|s| (s, false))
        .chain(misses.iter().map(|s| (s, true)))
    {
        let findings = scan(sample.text.as_bytes());
        let mut expected = Vec::new();
        for (kind, secret) in &sample.secrets {
            let span = span_of(&sample.text, secret);
            expected.push(span);
            if found(&findings, kind, span) {
                true_positives += 1;
            } else {
                false_negatives.push((sample.name, by_design));
            }
        }
        for f in &findings {
            if !expected.contains(&(f.start, f.end)) {
                false_positives.push(format!("{}: {} at {}", sample.name, f.kind, f.place()));
            }
        }
    }
    let mut negatives_scanned = 0;
    for (name, text) in negatives() {
        negatives_scanned += 1;
        for f in scan(text.as_bytes()) {
            false_positives.push(format!(
                "{name}: {} at {} ({:?})",
                f.kind,
                f.place(),
                &text[f.start..f.end]
            ));
        }
    }
    let tp = true_positives as f64;
    let precision = tp / (tp + false_positives.len() as f64);
    let recall = tp / (tp + false_negatives.len() as f64);
    println!(
        "secret scan corpus: {} positive samples ({} missed by design), {negatives_scanned} \
         look-alike samples; {true_positives} true positives, {} false positives, {} false \
         negatives; precision {precision:.3}, recall {recall:.3}",
        must.len() + misses.len(),
        misses.len(),
        false_positives.len(),
        false_negatives.len(),
    );
    assert!(
        false_positives.is_empty(),
        "false positives: {false_positives:#?}"
    );
    let unexpected: Vec<&str> = false_negatives
        .iter()
        .filter(|(_, by_design)| !by_design)
        .map(|(name, _)| *name)
        .collect();
    assert!(unexpected.is_empty(), "secrets missed: {unexpected:?}");
    assert_eq!(
        false_negatives.len(),
        misses.len(),
        "a miss by design is now found: move it to the positives and docs/secrets.md"
    );
}

#[test]
fn masking_every_positive_leaves_no_secret_and_nothing_to_find() {
    for sample in positives() {
        let findings = scan(sample.text.as_bytes());
        let masked = String::from_utf8(mask(sample.text.as_bytes(), &findings)).expect("UTF-8");
        for (kind, secret) in &sample.secrets {
            assert!(
                !masked.contains(secret.as_str()),
                "{}: {masked}",
                sample.name
            );
            assert!(masked.contains(&mask_of(kind)), "{}: {masked}", sample.name);
        }
        assert_eq!(
            scan(masked.as_bytes()),
            Vec::new(),
            "{}: {masked}",
            sample.name
        );
    }
}

#[test]
fn a_finding_names_the_line_and_columns_of_the_secret() {
    let key = fake("ghp_", ALNUM, 36, 70);
    let text = format!("line one\n  é token {key} after\n");
    let f = &scan(text.as_bytes())[0];
    assert_eq!((f.kind, f.line, f.end_line), ("github_token", 2, 2));
    // Columns count characters: `é` is one.
    assert_eq!((f.column, f.end_column), (11, 50));
    let block = format!("a\nb\n{}\n", pem(concat!("PRIVATE", " KEY"), 3, 71, "\n"));
    let f = &scan(block.as_bytes())[0];
    assert_eq!((f.kind, f.line, f.end_line), ("private_key", 3, 8));
    assert_eq!(f.place(), "lines 3-8");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Hex digests, UUIDs and base64 of any bytes, alone or in a line of
    /// code or prose, are never taken for a secret.
    #[test]
    fn hashes_ids_and_base64_are_never_secrets(
        bytes in proptest::collection::vec(any::<u8>(), 1..120),
        seed in any::<u64>(),
        context in 0usize..4,
    ) {
        use std::fmt::Write;
        let hex = bytes.iter().fold(String::new(), |mut s, b| { let _ = write!(s, "{b:02x}"); s });
        let uuid = {
            let h = fake("", HEX, 32, seed);
            format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
        };
        let b64 = fake("", BASE64, bytes.len() * 4 / 3 + 1, seed);
        for value in [hex, uuid, b64] {
            let line = match context {
                0 => value.clone(),
                1 => format!("let digest = \"{value}\";"),
                2 => format!("checksum = \"{value}\"\nid: {value}"),
                _ => format!("The object {value} was written."),
            };
            prop_assert_eq!(scan(line.as_bytes()), Vec::new(), "{}", line);
        }
    }
}
