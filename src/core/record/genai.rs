//! The record's `model`, `modelSource` and `provider`: which model answered and whose it is, in
//! OpenTelemetry GenAI's terms (`gen_ai.response.model` / `gen_ai.request.model`,
//! `gen_ai.provider.name`; registry: open-telemetry/semantic-conventions-genai
//! model/gen-ai/registry.yaml, the subset we use in tests/fixtures/genai-registry.yaml).
//!
//! - `model`: the one the stream names (`stream/formats.rs`: `source` "stream"); when it names
//!   none, the app's `models` rule for the URL (`source` "config"); else `null`. The stream
//!   wins: it says what actually answered (`gpt-4o-2024-08-06` where the app asked `gpt-4o`).
//! - `provider`: the app's `models` rule for the URL; else the host's, by `PROVIDERS`; else
//!   `null`. The format alone never names one: Chat Completions is spoken by dozens of servers
//!   (vLLM, Ollama, gateways), and an app's own backend relays any provider's stream — whose
//!   provider only the app knows (the conventions: "SHOULD be set based on the
//!   instrumentation's best knowledge").

use crate::core::config::Config;
use crate::core::request::timeline::Timeline;
use crate::core::util::url::split;

/// OpenTelemetry GenAI's explicit bucket boundaries (seconds) for
/// `gen_ai.client.operation.time_to_first_chunk` and `…time_per_output_chunk`
/// (semantic-conventions-genai, docs/gen-ai/gen-ai-metrics.md). The record's `itl.buckets`
/// counts the answer's gaps between these; the collector's `/metrics` uses the same table.
pub const CHUNK_BUCKETS_S: [f64; 14] =
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];

/// The providers' API hosts, with the conventions' well-known `gen_ai.provider.name` values:
/// `(host prefix, host domain, provider)`. A host matches when it is the domain or ends with it
/// after a `.` or `-` (Vertex AI's regional hosts are `us-central1-aiplatform.googleapis.com`)
/// and starts with the prefix. Every domain is inside its provider's own registered domain, so
/// no one else can serve from a matching host.
pub const PROVIDERS: [(&str, &str, &str); 20] = [
    ("", "api.openai.com", "openai"),
    ("", "api.anthropic.com", "anthropic"),
    // Azure OpenAI: `<resource>.openai.azure.com`; Azure AI Foundry's hosts serve both Azure
    // OpenAI (`/openai/…` paths, see `provider_of_host`) and the Azure AI model inference API.
    ("", "openai.azure.com", "azure.ai.openai"),
    ("", "services.ai.azure.com", "azure.ai.inference"),
    ("", "cognitiveservices.azure.com", "azure.ai.inference"),
    ("", "models.ai.azure.com", "azure.ai.inference"),
    ("", "inference.ai.azure.com", "azure.ai.inference"),
    // The conventions name these two hosts themselves.
    ("", "generativelanguage.googleapis.com", "gcp.gemini"),
    ("", "aiplatform.googleapis.com", "gcp.vertex_ai"),
    ("bedrock-runtime", "amazonaws.com", "aws.bedrock"),
    ("", "ml.cloud.ibm.com", "ibm.watsonx.ai"),
    ("", "api.cohere.com", "cohere"),
    ("", "api.cohere.ai", "cohere"),
    ("", "api.mistral.ai", "mistral_ai"),
    ("", "api.groq.com", "groq"),
    ("", "api.deepseek.com", "deepseek"),
    ("", "api.x.ai", "x_ai"),
    ("", "api.perplexity.ai", "perplexity"),
    ("", "api.moonshot.ai", "moonshot_ai"),
    ("", "api.moonshot.cn", "moonshot_ai"),
];

/// The provider of a request to `url` (absolute), by `PROVIDERS`. The host is what follows
/// the origin's `//`; with a port (never on these APIs) nothing matches.
pub fn provider_of_host(url: &str) -> Option<&'static str> {
    let (origin, path, _) = split(url);
    let host = origin.get(origin.bytes().rposition(|b| b == b'/').map_or(0, |i| i + 1)..).unwrap_or("");
    let &(_, _, provider) = PROVIDERS.iter().find(|(prefix, domain, _)| {
        let boundary = host.strip_suffix(domain).map(|r| matches!(r.bytes().last(), None | Some(b'.' | b'-')));
        host.starts_with(prefix) && boundary == Some(true)
    })?;
    // On Azure AI Foundry's hosts, `/openai/…` is the Azure OpenAI API.
    if provider == "azure.ai.inference" && path.starts_with("/openai/") {
        return Some("azure.ai.openai");
    }
    Some(provider)
}

/// What a record says about the model and provider.
#[derive(Debug, PartialEq, Eq)]
pub struct ModelInfo<'a> {
    pub model: Option<&'a str>,
    /// `stream` or `config` (where `model` came from), `None` without a model.
    pub source: Option<&'static str>,
    pub provider: Option<&'a str>,
}

/// The model and provider of a finished request.
pub fn model_info<'a>(tl: &'a Timeline, cfg: &'a Config) -> ModelInfo<'a> {
    let url = tl.ident.url.as_str();
    let rule = cfg.model_rule(url);
    let configured = rule.and_then(|r| r.model.as_deref());
    let (model, source) = match (tl.model(), configured) {
        (Some(m), _) => (Some(m), Some("stream")),
        (None, Some(m)) => (Some(m), Some("config")),
        (None, None) => (None, None),
    };
    let provider = rule.and_then(|r| r.provider.as_deref()).or_else(|| provider_of_host(url));
    ModelInfo { model, source, provider }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_buckets_are_ten_ms_doubling() {
        // record/encode.rs doubles 10 ms instead of reading the table (size): the same bounds.
        for (i, b) in CHUNK_BUCKETS_S.iter().enumerate() {
            assert_eq!(*b * 1000.0, 10.0 * (1u32 << i) as f64, "bucket {i}");
        }
    }

    #[test]
    fn providers_by_host() {
        for (url, want) in [
            ("https://api.openai.com/v1/chat/completions", Some("openai")),
            ("https://api.openai.com/v1/responses", Some("openai")),
            ("https://api.anthropic.com/v1/messages", Some("anthropic")),
            ("https://my-res.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21", Some("azure.ai.openai")),
            ("https://my-res.services.ai.azure.com/models/chat/completions", Some("azure.ai.inference")),
            ("https://my-res.services.ai.azure.com/openai/deployments/d/chat/completions", Some("azure.ai.openai")),
            ("https://my-res.cognitiveservices.azure.com/openai/v1/responses", Some("azure.ai.openai")),
            ("https://ep.eastus2.models.ai.azure.com/chat/completions", Some("azure.ai.inference")),
            ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse", Some("gcp.gemini")),
            ("https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/anthropic/models/claude:streamRawPredict", Some("gcp.vertex_ai")),
            ("https://aiplatform.googleapis.com/v1/projects/p/locations/global/endpoints/openapi/chat/completions", Some("gcp.vertex_ai")),
            ("https://bedrock-runtime.us-east-1.amazonaws.com/model/x/converse-stream", Some("aws.bedrock")),
            ("https://bedrock-runtime-fips.us-east-1.amazonaws.com/model/x/converse-stream", Some("aws.bedrock")),
            ("https://us-south.ml.cloud.ibm.com/ml/v1/text/chat_stream", Some("ibm.watsonx.ai")),
            ("https://api.cohere.com/v2/chat", Some("cohere")),
            ("https://api.mistral.ai/v1/chat/completions", Some("mistral_ai")),
            ("https://api.groq.com/openai/v1/chat/completions", Some("groq")),
            ("https://api.deepseek.com/chat/completions", Some("deepseek")),
            ("https://api.x.ai/v1/chat/completions", Some("x_ai")),
            ("https://api.perplexity.ai/chat/completions", Some("perplexity")),
            ("https://api.moonshot.ai/v1/chat/completions", Some("moonshot_ai")),
            // The app's own backend, local servers, look-alikes: no provider.
            ("https://chat.example.com/api/chat", None),
            ("http://127.0.0.1:11434/api/chat", None),
            ("https://api.openai.com.evil.example/v1/chat/completions", None),
            ("https://notapi.openai.comx/v1", None),
            ("https://s3.us-east-1.amazonaws.com/bucket", None),
            ("https://xapi.openai.com/v1", None),
            ("/api/chat", None),
        ] {
            assert_eq!(provider_of_host(url), want, "{url}");
        }
    }
}
