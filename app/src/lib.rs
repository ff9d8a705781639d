//! latlab's web UI: pages, components and the server functions they call. The same code
//! renders HTML on the server (`ssr`) and hydrates it in the browser (`hydrate`).

pub mod components;
pub mod format;
pub mod pages;
pub mod run_form;
pub mod server_fns;
#[cfg(feature = "ssr")]
pub mod store;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{A, Route, Router, Routes};
use leptos_router::{SsrMode, path};

/// The HTML document around the app (server side only).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Every route renders completely on the server before sending (SsrMode::Async), so the
    // pages read the same with JavaScript off.
    view! {
        <Stylesheet id="leptos" href="/pkg/latlab.css"/>
        <Title text="latlab"/>
        <Router>
            <header class="topbar">
                <A href="/" attr:class="brand">"latlab"</A>
                <nav>
                    <A href="/runs">"Runs"</A>
                    <A href="/comparisons">"Comparisons"</A>
                    <A href="/runs/new">"New run"</A>
                    <A href="/import">"Import"</A>
                </nav>
            </header>
            <main>
                <Routes fallback=|| view! { <pages::NotFound/> }>
                    <Route path=path!("") view=pages::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/runs") view=pages::RunsPage ssr=SsrMode::Async/>
                    <Route path=path!("/comparisons") view=pages::ComparisonsPage ssr=SsrMode::Async/>
                    <Route path=path!("/runs/new") view=pages::NewRunPage ssr=SsrMode::Async/>
                    <Route path=path!("/import") view=pages::ImportPage ssr=SsrMode::Async/>
                    <Route path=path!("/runs/:id") view=pages::RunPage ssr=SsrMode::Async/>
                    <Route path=path!("/runs/:id/delete") view=pages::DeleteRunPage ssr=SsrMode::Async/>
                    <Route path=path!("/c/:slug") view=pages::ComparisonPage ssr=SsrMode::Async/>
                    <Route path=path!("/c/:slug/delete") view=pages::DeleteComparisonPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}
