//! The model's Jinja chat template rendered with minijinja (+ Python string methods such as
//! `startswith`/`split`, which Qwen3's template uses).

use crate::error::{EngineError, Result};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
}

impl ChatTemplate {
    pub fn new(source: &str) -> Result<Self> {
        let mut env = minijinja::Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        // Templates expect Python's trim_blocks/lstrip_blocks off and keep_trailing_newline off,
        // which are minijinja's defaults too.
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| EngineError::Template(format!("compiling: {e}")))?;
        Ok(ChatTemplate { env })
    }

    /// The prompt text for `messages`, ending with the assistant turn's opening.
    /// `enable_thinking: Some(false)` makes Qwen3 skip its reasoning block.
    pub fn render(&self, messages: &[ChatMessage], enable_thinking: Option<bool>) -> Result<String> {
        if messages.is_empty() {
            return Err(EngineError::BadRequest("`messages` must not be empty".into()));
        }
        let tmpl = self.env.get_template("chat").expect("added in new()");
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => true,
            enable_thinking => enable_thinking,
            tools => minijinja::Value::UNDEFINED,
        };
        // enable_thinking: None must be "not defined", not `none`; the template tests
        // `enable_thinking is defined and enable_thinking is false`, so none behaves the same.
        tmpl.render(ctx).map_err(|e| EngineError::Template(format!("rendering: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs() -> Vec<ChatMessage> {
        vec![
            ChatMessage { role: "system".into(), content: "Be brief.".into() },
            ChatMessage { role: "user".into(), content: "Hi".into() },
            ChatMessage { role: "assistant".into(), content: "<think>\nhmm\n</think>\n\nHello!".into() },
            ChatMessage { role: "user".into(), content: "Why?".into() },
        ]
    }

    #[test]
    fn qwen3_template_renders_like_transformers() {
        let t = crate::tokenizer::tests::qwen3();
        let tmpl = t.chat_template.as_ref().unwrap();
        // Expected strings are what transformers' apply_chat_template produces for this
        // template (past assistant turns lose their reasoning block).
        let expect = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n";
        assert_eq!(tmpl.render(&msgs(), None).unwrap(), expect);
        assert_eq!(tmpl.render(&msgs(), Some(true)).unwrap(), expect);
        assert_eq!(tmpl.render(&msgs(), Some(false)).unwrap(), format!("{expect}<think>\n\n</think>\n\n"));
        assert!(tmpl.render(&[], None).is_err());
    }
}
