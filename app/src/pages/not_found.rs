use leptos::prelude::*;

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    {
        if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
            resp.set_status(axum_status::NOT_FOUND);
        }
    }
    view! {
        <section class="empty">
            <h1>"Not found"</h1>
            <p>"Nothing lives at this address. " <a href="/">"Back to the start"</a></p>
        </section>
    }
}

#[cfg(feature = "ssr")]
use http::StatusCode as axum_status;
