//! Archive / un-archive and delete, on a run's page. Both are plain forms or links, so they
//! work without JavaScript; deleting goes through its confirmation page first
//! (`pages::DeleteRunPage`).

use chrono::{DateTime, Utc};
use leptos::prelude::*;

#[component]
pub fn RunManage(id: i64, archived_at: Option<DateTime<Utc>>, terminal: bool) -> impl IntoView {
    let archived = archived_at.is_some();
    let note = archived_at.map(|at| {
        view! { <span class="muted" data-testid="archived-note">{format!("Archived {}; hidden from the runs list. ", crate::format::when(&at))}</span> }
    });
    view! {
        <div class="run-manage">
            {note}
            <form method="post" action=format!("/runs/{id}/archive") class="inline-form">
                <input type="hidden" name="archived" value=(!archived).to_string()/>
                <button type="submit" class="secondary" id="archive-run">{if archived { "Un-archive" } else { "Archive" }}</button>
            </form>
            {terminal.then(|| view! {
                " " <a class="button secondary danger" id="delete-run" href=format!("/runs/{id}/delete")>"Delete…"</a>
            })}
        </div>
    }
}
