//! The one URL splitter, and the one rule that takes identifiers out of recorded paths.
//!
//! URLs reach the core from the browser's URL parser (already absolute and normalised), so
//! cutting at two boundaries is all the core needs — a full URL parser would cost the shipped
//! wasm far more than its job is worth.
//!
//! **Id templating** (`is_id`, `push_route`): a record's `url` and the beacon's `page` leave
//! the page with id-like path segments replaced by `:id`. Ids are per-user identifiers
//! (conversations, threads, messages: a privacy problem) and make every conversation its own
//! route (a cardinality problem for per-route percentiles and alerts). A segment is an id when
//!
//! 1. after an optional prefix of letter groups each ending in `_` or `-` (`thread_`, `conv-`,
//!    `msg_`, `g-p-`), the rest is a UUID (`8-4-4-4-12` hex), a number of 4+ digits, 8+ hex
//!    digits mixing letters and digits, or 16+ letters and digits mixing both
//!    (`thread_9QxZr4…`, `msg_01XF…`, `resp_68af…`, ULIDs); or
//! 2. it looks random: 16+ chars of letters, digits, `_` and `-` that switch between lower
//!    case, upper case and digits at least once per 3 chars (the whole segment) or per 4
//!    chars (what follows the prefix): base64url tokens (nanoid `V1StGXR8_Z5jdHi6B-myT`)
//!    and ids that happen to have no digit. Model names and camelCase words switch far less
//!    (`claude-3-5-sonnet-20241022`: never; `streamGenerateContent`: 4 times in 21 chars).
//!
//! A `:verb` suffix (Google's custom methods, `…/endpoints/1234567890:predict`) is kept
//! after the templated id. Word-like segments stay: `v1`, `chat`, `completions`,
//! `gpt-4o-mini`, `count_tokens`, `us-central1`. Already templated segments (`:id`, `{id}`)
//! stay as they are, so applying the rule twice changes nothing.

use alloc::string::String;

/// `url` cut at its two boundaries: `scheme://authority`, the path, and what follows (the
/// `?query` and `#fragment`). The origin is "" when `url` has no `scheme://` before its
/// query; the three parts always concatenate back to `url`.
pub fn split(url: &str) -> (&str, &str, &str) {
    // Byte scanning and `get`: no panic path (a str-slicing panic alone would keep
    // core::fmt's Debug printing and Unicode tables in the wasm).
    let b = url.as_bytes();
    let query = b.iter().position(|&c| c == b'?' || c == b'#').unwrap_or(b.len());
    let head = b.get(..query).unwrap_or(&[]);
    let origin = match head.windows(3).position(|w| w == b"://") {
        Some(scheme_end) => {
            let start = scheme_end + 3;
            head.get(start..).and_then(|rest| rest.iter().position(|&c| c == b'/')).map_or(query, |p| start + p)
        }
        None => 0,
    };
    let part = |a: usize, z: usize| url.get(a..z).unwrap_or("");
    (part(0, origin), part(origin, query), part(query, b.len()))
}

/// `scheme://authority` of an absolute URL, or "" when there is none.
pub fn origin_of(url: &str) -> &str {
    split(url).0
}

/// Whether `part` occurs in `s` (a byte scan: `str::contains` with a &str pattern brings its
/// two-way searcher into the wasm; the strings here are a URL and a short rule).
pub fn contains(s: &str, part: &str) -> bool {
    part.is_empty() || s.as_bytes().windows(part.len()).any(|w| w == part.as_bytes())
}

/// `url` without query and fragment.
pub fn strip_query(url: &str) -> &str {
    let (origin, path, _) = split(url);
    url.get(..origin.len() + path.len()).unwrap_or(url)
}

/// The placeholder an id-like segment becomes.
pub const ID: &str = ":id";

/// `b` is a UUID: `8-4-4-4-12` hex digits, either case.
fn uuid(b: &[u8]) -> bool {
    b.len() == 36 && b.iter().enumerate().all(|(i, c)| if matches!(i, 8 | 13 | 18 | 23) { *c == b'-' } else { c.is_ascii_hexdigit() })
}

/// Rule 2: 16+ chars of `[A-Za-z0-9_-]` switching character class (lower, upper, digit) at
/// least once per `per` chars; `_` and `-` separate runs and do not count. A random base62/64
/// string switches at ~0.6 per char, words and model names at ≤ 0.25.
fn random_looking(b: &[u8], per: usize) -> bool {
    if b.len() < 16 {
        return false;
    }
    let (mut switches, mut prev) = (0, 0u8);
    for &c in b {
        let class = match c {
            b'a'..=b'z' => 1,
            b'A'..=b'Z' => 2,
            b'0'..=b'9' => 3,
            b'_' | b'-' => 0,
            _ => return false,
        };
        if class != 0 && prev != 0 && class != prev {
            switches += 1;
        }
        prev = class;
    }
    switches * per >= b.len()
}

/// Whether one path segment is an identifier (the rule in the module docs). `seg` is the
/// part before any `:verb` suffix.
pub fn is_id(seg: &str) -> bool {
    let b = seg.as_bytes();
    // Rule 1: strip the prefix (`thread_`, `conv-`, `g-p-`).
    let mut body = b;
    loop {
        let run = body.iter().take_while(|c| c.is_ascii_alphabetic()).count();
        match body.get(run) {
            Some(b'_' | b'-') if run > 0 => body = body.get(run + 1..).unwrap_or(&[]),
            _ => break,
        }
    }
    let n = body.len();
    let digits = body.iter().filter(|c| c.is_ascii_digit()).count();
    let mixed = digits > 0 && digits < n && body.iter().all(u8::is_ascii_alphanumeric);
    let hex = body.iter().all(u8::is_ascii_hexdigit);
    // A UUID may start with a letters-only group (`deadbeef-…`): the prefix rule ate it.
    uuid(b) || uuid(body) || (n >= 4 && digits == n) || (mixed && (n >= 16 || (hex && n >= 8)))
        // Rule 2, on the whole segment, and on what follows a prefix (a long prefix such as
        // `thread_` dilutes the switches; model names such as `DeepSeek-R1-Distill-Qwen-32B`
        // switch most in their prefix).
        || random_looking(b, 3)
        || random_looking(body, 4)
}

/// Appends the recorded form of `path`: the app's `template` when one of its `urlTemplates`
/// matched (the app knows its routes: used as given), else, with `auto`, `path` with every
/// id-like segment (`is_id`) replaced by `:id`, else `path` unchanged.
pub fn push_route(out: &mut String, path: &str, template: Option<&str>, auto: bool) {
    if let Some(t) = template {
        out.push_str(t);
        return;
    }
    if !auto {
        out.push_str(path);
        return;
    }
    // Byte offsets and `get`, not `str::split`: the generic pattern machinery costs the wasm
    // more than this loop. '/' and ':' are ASCII, so every cut is on a char boundary.
    let b = path.as_bytes();
    let mut start = 0;
    while start <= b.len() {
        let end = b.get(start..).and_then(|r| r.iter().position(|&c| c == b'/')).map_or(b.len(), |p| start + p);
        let seg = path.get(start..end).unwrap_or("");
        let head = seg.as_bytes().iter().position(|&c| c == b':').unwrap_or(seg.len());
        if is_id(seg.get(..head).unwrap_or("")) {
            out.push_str(ID);
            out.push_str(seg.get(head..).unwrap_or(""));
        } else {
            out.push_str(seg);
        }
        if end < b.len() {
            out.push('/');
        }
        start = end + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_queries() {
        assert_eq!(origin_of("https://a.b:8080/x?y#z"), "https://a.b:8080");
        assert_eq!(origin_of("https://a.b?y"), "https://a.b");
        assert_eq!(strip_query("https://a.b/x?y=1#z"), "https://a.b/x");
        assert_eq!(strip_query("https://a.b/x#z?q"), "https://a.b/x");
    }

    #[test]
    fn substrings() {
        assert!(contains("https://chat.example/api/chat", "/api/chat"));
        assert!(contains("https://chat.example/api/chat", "https://chat.example/"));
        assert!(!contains("https://chat.example/api/cha", "/api/chat"));
        assert!(contains("é/x", "/x") && contains("", "") && !contains("", "a"));
    }

    #[test]
    fn parts_concatenate_back() {
        for url in ["https://a.b/x/y?q=1#f", "https://a.b", "http://a.b#f", "/rel?x=http://c", "", "data:text/plain,hi", "IMG[src=https://x/?t=1].onload"] {
            let (o, p, q) = split(url);
            assert_eq!([o, p, q].concat(), url);
        }
        assert_eq!(split("https://a.b/x/y?q=1#f"), ("https://a.b", "/x/y", "?q=1#f"));
        // A "://" inside the query is not a scheme.
        assert_eq!(split("/rel?x=http://c"), ("", "/rel", "?x=http://c"));
        assert_eq!(strip_query("IMG[src=https://x/?t=1].onload"), "IMG[src=https://x/");
    }

    fn route(path: &str) -> String {
        let mut out = String::new();
        push_route(&mut out, path, None, true);
        out
    }

    const UUID: &str = "3f6c1e2a-9b4d-4c8e-a1f0-7d2b5e9c4a61";

    /// Real-world paths (APIs and chat pages) → what leaves the page. Ids replaced, words kept.
    #[test]
    fn real_world_paths() {
        let table: &[(&str, &str)] = &[
            // OpenAI
            ("/v1/chat/completions", "/v1/chat/completions"),
            ("/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/runs", "/v1/threads/:id/runs"),
            ("/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/chat/completions", "/v1/threads/:id/chat/completions"),
            ("/v1/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/runs/run_Ab3dE5fG7hJ9kL1mN3pQ5rS7/steps", "/v1/threads/:id/runs/:id/steps"),
            ("/v1/assistants/asst_Wd1xXYZ2RAkOJ2XgQ2Q1pBdk", "/v1/assistants/:id"),
            ("/v1/files/file-BK7bzQj3FfZFXr7DbL6xJwfo/content", "/v1/files/:id/content"),
            ("/v1/responses/resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "/v1/responses/:id"),
            ("/v1/chat/completions/chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT/messages", "/v1/chat/completions/:id/messages"),
            ("/v1/conversations/conv_68a5d1f2e3c4b5a6978877665544332211aa/items", "/v1/conversations/:id/items"),
            ("/v1/batches/batch_6710f8b1e2c48190a2e3d4f5a6b7c8d9/cancel", "/v1/batches/:id/cancel"),
            ("/v1/models/gpt-4o-mini", "/v1/models/gpt-4o-mini"),
            ("/v1/models/gpt-4o-mini-2024-07-18", "/v1/models/gpt-4o-mini-2024-07-18"),
            ("/v1/vector_stores/vs_67a1b2c3d4e5f60718293a4b/files", "/v1/vector_stores/:id/files"),
            ("/v1/fine_tuning/jobs/ftjob-abc123DEF456ghi789JKL012", "/v1/fine_tuning/jobs/:id"),
            ("/v1/realtime/sessions", "/v1/realtime/sessions"),
            // Anthropic
            ("/v1/messages", "/v1/messages"),
            ("/v1/messages/count_tokens", "/v1/messages/count_tokens"),
            ("/v1/messages/batches/msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d/results", "/v1/messages/batches/:id/results"),
            ("/v1/files/file_011CNha8iCJcU1wXNR6q4V8w", "/v1/files/:id"),
            ("/v1/models/claude-3-5-sonnet-20241022", "/v1/models/claude-3-5-sonnet-20241022"),
            ("/v1/models/claude-sonnet-4-20250514", "/v1/models/claude-sonnet-4-20250514"),
            // Azure OpenAI (api-version is in the query, stripped before this)
            ("/openai/deployments/gpt-4o-mini/chat/completions", "/openai/deployments/gpt-4o-mini/chat/completions"),
            ("/openai/deployments/gpt-35-turbo-16k/chat/completions", "/openai/deployments/gpt-35-turbo-16k/chat/completions"),
            ("/openai/deployments/my-gpt4o-prod/chat/completions", "/openai/deployments/my-gpt4o-prod/chat/completions"),
            ("/openai/threads/thread_9QxZr4kLmN2pT7vB1cD5eF8g/messages", "/openai/threads/:id/messages"),
            // Google (custom methods after ':'), Bedrock, Hugging Face, Ollama, TGI, OpenRouter
            ("/v1beta/models/gemini-1.5-pro:streamGenerateContent", "/v1beta/models/gemini-1.5-pro:streamGenerateContent"),
            (
                "/v1/projects/123456789012/locations/us-central1/endpoints/1234567890123456789:streamGenerateContent",
                "/v1/projects/:id/locations/us-central1/endpoints/:id:streamGenerateContent",
            ),
            (
                "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.0-flash-001:streamGenerateContent",
                "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-2.0-flash-001:streamGenerateContent",
            ),
            (
                "/model/anthropic.claude-3-5-sonnet-20241022-v2:0/invoke-with-response-stream",
                "/model/anthropic.claude-3-5-sonnet-20241022-v2:0/invoke-with-response-stream",
            ),
            ("/models/deepseek-ai/DeepSeek-R1-Distill-Qwen-32B/v1/chat/completions", "/models/deepseek-ai/DeepSeek-R1-Distill-Qwen-32B/v1/chat/completions"),
            ("/models/meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "/models/meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"),
            ("/api/chat", "/api/chat"),
            ("/api/generate", "/api/generate"),
            ("/generate_stream", "/generate_stream"),
            ("/api/v1/chat/completions", "/api/v1/chat/completions"),
            // Vercel AI SDK routes: generateId() (16 alphanumerics), nanoid(), the chatbot
            // template's UUIDs
            ("/api/chat/Kx8sP2mQ9vR4tL7w/stream", "/api/chat/:id/stream"),
            ("/api/chat/V1StGXR8_Z5jdHi6B-myT", "/api/chat/:id"),
            (&"/api/chat/UUID/stream".replace("UUID", UUID), "/api/chat/:id/stream"),
            ("/api/history", "/api/history"),
            // ChatGPT-like pages
            (&"/c/UUID".replace("UUID", UUID), "/c/:id"),
            (&"/share/UUID".replace("UUID", UUID.to_uppercase().as_str()), "/share/:id"),
            (&"/g/g-p-67f0a1b2c3d4e5f60718293a4b5c6d7e/c/UUID".replace("UUID", UUID), "/g/:id/c/:id"),
            (&"/backend-api/conversation/UUID".replace("UUID", UUID), "/backend-api/conversation/:id"),
            ("/backend-api/f/conversation", "/backend-api/f/conversation"),
            // Claude-like pages and API
            (&"/chat/UUID".replace("UUID", UUID), "/chat/:id"),
            (&"/project/UUID".replace("UUID", UUID), "/project/:id"),
            (
                &"/api/organizations/4c9a1d2e-5b6f-4a7c-8d9e-0f1a2b3c4d5e/chat_conversations/UUID/completion".replace("UUID", UUID),
                "/api/organizations/:id/chat_conversations/:id/completion",
            ),
            ("/new", "/new"),
            // Gemini-like pages (16 hex), numbers of 4+ digits, short numbers kept
            ("/app/4a9f1c2b3d4e5f60", "/app/:id"),
            ("/orders/12345/items/7", "/orders/:id/items/7"),
            ("/v2/users/42", "/v2/users/42"),
            // UUID-shaped with a letters-only first group; trailing slash; empty; templated already
            ("/x/deadbeef-1234-4abc-8def-0123456789ab/", "/x/:id/"),
            ("", ""),
            ("/", "/"),
            ("/v1/threads/:id/runs", "/v1/threads/:id/runs"),
            ("/v1/threads/{thread_id}/runs", "/v1/threads/{thread_id}/runs"),
        ];
        for (path, want) in table {
            assert_eq!(route(path), *want, "{path}");
            assert_eq!(route(want), *want, "templating is idempotent: {want}");
        }
    }

    /// Word-like segments: model names across providers, API words, camelCase methods.
    #[test]
    fn words_stay() {
        for w in [
            "v1", "v1beta", "v2", "chat", "completions", "gpt-4o", "gpt-4o-mini", "gpt-4-turbo-preview", "o1-preview",
            "o3-mini-2025-01-31", "text-embedding-3-large", "text-embedding-ada-002", "claude-3-7-sonnet-latest",
            "claude-opus-4-1-20250805", "Qwen2-VL-72B-Instruct", "Mistral-Small-24B-Instruct-2501", "Phi-3-mini-4k-instruct",
            "gemma-2-27b-it", "llama3", "llama3.1:70b", "mixtral-8x7b-32768", "deepseek-r1-distill-llama-70b",
            "DeepSeek-R1-Distill-Qwen-32B", "command-r-plus-08-2024", "sonar-reasoning-pro", "us-central1", "eu-west-3",
            "streamGenerateContent", "batchEmbedContents", "createChatCompletionStream", "handleOpenAIStreamResponse",
            "getConversationHistory", "invoke-with-response-stream", "converse-stream", "chat_conversations",
            "internationalization", "backend-api", "2025-01-31", "123", "2fa", "e2e", "deadbeef", "ff00ff",
            ":id", "{id}", "*", "", "%E4%BD%A0%E5%A5%BD",
        ] {
            assert!(!is_id(w), "{w} is a word");
        }
    }

    /// Ids as the platforms generate them, 20 000 of each (fixed seed): how many the rule
    /// misses. Alphanumeric ids without a digit, and base64url ids, are caught by how often
    /// they switch case and digits (rule 2), which a random string can fail to do: measured
    /// here 2 of 20 000 `thread_` ids, 24 (0.12 %) 16-char generateId() ids, 156 (0.8 %)
    /// nanoids — the ones that happen to have long same-case runs and a `-` or `_` breaking
    /// them up. Model names sit on the other side of the same threshold (`words_stay`), so an
    /// app whose routes carry nanoids names them in `urlTemplates`.
    #[test]
    fn generated_ids_are_caught() {
        use crate::core::util::test_rng::Rng;
        const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        const B64URL: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-";
        const HEX: &[u8] = b"0123456789abcdef";
        let mut rng = Rng(0x5eed_1d5);
        let mut gen = |prefix: &str, alphabet: &[u8], n: usize| -> String {
            let mut s = String::from(prefix);
            for _ in 0..n {
                s.push(alphabet[rng.index(alphabet.len())] as char);
            }
            s
        };
        const N: usize = 20_000;
        // (kind, prefix, alphabet, length, most misses allowed per N)
        let kinds: &[(&str, &str, &[u8], usize, usize)] = &[
            ("uuid-like hex 32", "", HEX, 32, 0),
            ("mongo ObjectId", "", HEX, 24, 0),
            ("OpenAI thread_ + 24 base62", "thread_", B62, 24, 10),
            ("Anthropic msg_01 + 22 base62", "msg_01", B62, 22, 0),
            ("AI SDK generateId (16 base62)", "", B62, 16, 40),
            ("nanoid (21 base64url)", "", B64URL, 21, 200),
        ];
        for &(kind, prefix, alphabet, len, max_missed) in kinds {
            let missed = (0..N).filter(|_| route(&gen(prefix, alphabet, len)) != ":id").count();
            std::println!("{kind}: {missed} of {N} missed");
            assert!(missed <= max_missed, "{kind}: {missed} of {N} missed");
        }
        let mut rng = Rng(7);
        for _ in 0..N {
            let hex = |rng: &mut Rng, n: usize| (0..n).map(|_| HEX[rng.index(16)] as char).collect::<String>();
            let u = [hex(&mut rng, 8), hex(&mut rng, 4), hex(&mut rng, 4), hex(&mut rng, 4), hex(&mut rng, 12)].join("-");
            assert_eq!(route(&u), ":id", "{u}");
        }
    }

    #[test]
    fn app_templates_win_and_auto_can_be_off() {
        let mut out = String::new();
        push_route(&mut out, "/v1/models/20241022", Some("/v1/models/20241022"), true);
        assert_eq!(out, "/v1/models/20241022", "the app's template is used as given");
        out.clear();
        push_route(&mut out, &["/c/", UUID].concat(), None, false);
        assert_eq!(out, ["/c/", UUID].concat(), "templateIds: false");
    }
}
