//! Server-sent events for a streaming generation, in the shape `vllm bench serve` measures:
//! the first `choices` event only once a real token exists (no role-only chunk before
//! prefill), `finish_reason` on the last token's chunk, an optional usage event with empty
//! `choices`, then `data: [DONE]`.

use crate::generation::{Generation, Piece, Usage};
use axum::response::sse::{Event, Sse};
use std::convert::Infallible;
use tokio_stream::wrappers::ReceiverStream;

/// How one endpoint writes its chunks.
pub trait ChunkFormat: Send + 'static {
    fn delta(&self, text: &str, first: bool, finish: Option<&str>) -> serde_json::Value;
    fn usage(&self, usage: Usage) -> serde_json::Value;
}

pub fn stream(
    mut generation: Generation,
    format: impl ChunkFormat,
    include_usage: bool,
) -> Sse<ReceiverStream<Result<Event, Infallible>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let send = |v: String| {
            let tx = tx.clone();
            async move { tx.send(Ok(Event::default().data(v))).await.is_ok() }
        };
        // When the client goes away the response stream (and rx) is dropped, send fails, this
        // task returns and drops `generation`, which cancels the request in the engine.
        while let Some(piece) = generation.next().await {
            let ok = match piece {
                Piece::Delta { text, first, finish } => {
                    if first || finish.is_some() || !text.is_empty() {
                        send(format.delta(&text, first, finish).to_string()).await
                    } else {
                        true
                    }
                }
                Piece::Finished { usage } => {
                    if include_usage && !send(format.usage(usage).to_string()).await {
                        return;
                    }
                    break;
                }
                Piece::Failed(msg) => {
                    let err = serde_json::json!({"error": {"message": msg, "type": "server_error", "param": null, "code": null}});
                    send(err.to_string()).await
                }
            };
            if !ok {
                return;
            }
        }
        let _ = send("[DONE]".to_string()).await;
    });
    Sse::new(ReceiverStream::new(rx))
}
