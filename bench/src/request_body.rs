//! The JSON bodies vLLM's benchmark sends, per backend. Serialised once, before the run.

use bench_types::{Backend, Sampling};
use serde_json::{Map, Value, json};

pub fn build_body(
    backend: Backend,
    model: &str,
    prompt: &str,
    output_len: u32,
    sampling: &Sampling,
) -> Value {
    let mut body = match backend {
        Backend::OpenaiChat => json!({
            "model": model,
            "messages": [{"role": "user", "content": prompt}],
            "max_completion_tokens": output_len,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
        Backend::Openai => json!({
            "model": model,
            "prompt": prompt,
            "max_tokens": output_len,
            "stream": true,
            "stream_options": {"include_usage": true},
        }),
    };
    let obj = body.as_object_mut().expect("a JSON object literal");
    if sampling.ignore_eos {
        obj.insert("ignore_eos".into(), json!(true));
    }
    // vLLM sends the sampling flags as extra body keys, under the user's own extra body.
    for (k, v) in sampling.parameters() {
        obj.insert(k.into(), v);
    }
    if let Some(Value::Object(extra)) = &sampling.extra_body {
        merge(obj, extra);
    }
    body
}

/// `--extra-body` wins over defaults, key by key at the top level (as vLLM's `update`).
fn merge(into: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (k, v) in extra {
        into.insert(k.clone(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_body_has_vllm_fields_and_extras_override() {
        let s = Sampling {
            ignore_eos: true,
            temperature: Some(0.0),
            extra_body: Some(json!({"top_k": 5, "temperature": 0.7})),
            top_k: Some(3),
            top_p: Some(0.9),
            repetition_penalty: Some(1.1),
            ..Sampling::default()
        };
        let b = build_body(Backend::OpenaiChat, "m", "hi", 12, &s);
        assert_eq!(b["messages"][0]["content"], "hi");
        assert_eq!(b["max_completion_tokens"], 12);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["top_k"], 5, "--extra-body wins over --top-k");
        assert_eq!(b["temperature"], 0.7);
        assert_eq!((b["top_p"].as_f64(), b["repetition_penalty"].as_f64()), (Some(0.9), Some(1.1)));
        assert!(
            b.get("min_p").is_none() && b.get("presence_penalty").is_none(),
            "unset parameters are not sent"
        );
        let b =
            build_body(Backend::Openai, "m", "hi", 3, &Sampling { temperature: None, ..Sampling::default() });
        assert_eq!((b["prompt"].as_str(), b["max_tokens"].as_u64()), (Some("hi"), Some(3)));
        assert!(b.get("ignore_eos").is_none() && b.get("temperature").is_none());
    }
}
