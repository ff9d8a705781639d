//! The new-run form. Every keystroke re-runs `RunForm::to_spec` (which ends in
//! `RunSpec::validate`, the same code the server runs) in the browser, so errors appear
//! beside their field without a round trip; the server checks again on submit. Without
//! JavaScript the form still posts to the server function and lands on the new run.

use crate::run_form::RunForm;
use crate::server_fns::CreateRuns;
use bench_types::ValidationErrors;
use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use std::collections::HashSet;

mod goodput_fields;
use goodput_fields::GoodputFields;

type GetFn = fn(&RunForm) -> String;

/// Fields of the collapsed sampling section: it opens when one of them has an error.
const SAMPLING_PATHS: [&str; 6] = [
    "sampling.top_p",
    "sampling.top_k",
    "sampling.min_p",
    "sampling.frequency_penalty",
    "sampling.presence_penalty",
    "sampling.repetition_penalty",
];
type SetFn = fn(&mut RunForm, String);

#[derive(Clone, Copy)]
struct FormCtx {
    form: RwSignal<RunForm>,
    touched: RwSignal<HashSet<&'static str>>,
    submitted: RwSignal<bool>,
    errors: Memo<ValidationErrors>,
    server_errors: RwSignal<ValidationErrors>,
}

impl FormCtx {
    /// The message for a spec path, once the user has touched the field or submitted.
    fn error(&self, path: &'static str) -> Option<String> {
        let shown = self.submitted.get() || self.touched.with(|t| t.contains(path));
        if !shown {
            return None;
        }
        self.errors
            .with(|e| e.for_field(path).map(str::to_string))
            .or_else(|| self.server_errors.with(|e| e.for_field(path).map(str::to_string)))
    }
}

#[component]
fn Field(
    ctx: FormCtx,
    label: &'static str,
    /// Input name inside the form (`form[<name>]`).
    name: &'static str,
    /// The RunSpec field this input feeds (errors are reported under it).
    path: &'static str,
    get: GetFn,
    set: SetFn,
    #[prop(optional)] hint: &'static str,
    #[prop(optional)] placeholder: &'static str,
) -> AnyView {
    let initial = ctx.form.with_untracked(get);
    let id = format!("f-{name}");
    let err_id = format!("{name}-error");
    view! {
        <div class="field" class:invalid=move || ctx.error(path).is_some()>
            <label for=id.clone()>{label}</label>
            <input
                id=id
                name=format!("form[{name}]")
                value=initial
                placeholder=placeholder
                data-field=path
                aria-describedby=err_id.clone()
                prop:value=move || ctx.form.with(get)
                on:input=move |ev| {
                    let v = event_target_value(&ev);
                    ctx.form.update(|f| set(f, v));
                    ctx.touched.update(|t| { t.insert(path); });
                    ctx.server_errors.set(ValidationErrors::default());
                }
            />
            {(!hint.is_empty()).then(|| view! { <small class="hint">{hint}</small> })}
            <p class="field-error" id=err_id role="alert">{move || ctx.error(path)}</p>
        </div>
    }
    .into_any()
}

#[component]
fn Choice(
    ctx: FormCtx,
    label: &'static str,
    name: &'static str,
    path: &'static str,
    options: &'static [(&'static str, &'static str)],
    get: GetFn,
    set: SetFn,
    #[prop(optional)] hint: &'static str,
) -> AnyView {
    let id = format!("f-{name}");
    let opts = options
        .iter()
        .map(|&(value, text)| {
            view! { <option value=value selected=move || ctx.form.with(get) == value>{text}</option> }
        })
        .collect_view();
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <select id=id name=format!("form[{name}]") data-field=path
                on:change=move |ev| { let v = event_target_value(&ev); ctx.form.update(|f| set(f, v)); }>
                {opts}
            </select>
            {(!hint.is_empty()).then(|| view! { <small class="hint">{hint}</small> })}
            <p class="field-error" role="alert">{move || ctx.error(path)}</p>
        </div>
    }
    .into_any()
}

/// `/runs/new`, or `/runs/new?from=<id>` to start from a stored run's settings (Re-run).
#[component]
pub fn NewRunPage() -> impl IntoView {
    let from = leptos_router::hooks::use_query_map().read_untracked().get("from");
    let Some(from) = from.filter(|f| !f.is_empty()) else {
        return view! { <NewRunForm initial=RunForm::default() note=None/> }.into_any();
    };
    let Ok(id) = from.parse::<i64>() else {
        let note = Some(format!("{from:?} is not a run id; the form starts from its defaults."));
        return view! { <NewRunForm initial=RunForm::default() note/> }.into_any();
    };
    let run = Resource::new(move || id, crate::server_fns::get_run);
    view! {
        <Suspense fallback=|| view! { <p>"Loading the run's settings…"</p> }>
            {move || run.get().map(|r| {
                let (initial, note) = prefill(id, r);
                view! { <NewRunForm initial note/> }
            })}
        </Suspense>
    }
    .into_any()
}

/// The form filled in from run `id`, and what to tell the person about it.
fn prefill(id: i64, run: Result<Option<bench_types::RunView>, ServerFnError>) -> (RunForm, Option<String>) {
    let fresh = |why: String| (RunForm::default(), Some(why));
    match run {
        Ok(Some(run)) => match RunForm::from_spec(&run.spec) {
            Ok(form) => {
                (form, Some(format!("Filled in from run #{id}: change anything, then create the run.")))
            }
            Err(why) => fresh(format!(
                "Run #{id} cannot be re-run from this form: {why}. The form starts from its defaults."
            )),
        },
        Ok(None) => fresh(format!("There is no run #{id}; the form starts from its defaults.")),
        Err(e) => fresh(format!("Could not load run #{id} ({e}); the form starts from its defaults.")),
    }
}

#[component]
fn NewRunForm(initial: RunForm, note: Option<String>) -> AnyView {
    let form = RwSignal::new(initial);
    // Every spec the form makes (a ladder's rungs, each preset) is checked, not only the first.
    let errors = Memo::new(move |_| form.with(|f| f.to_specs().err().unwrap_or_default()));
    let ctx = FormCtx {
        form,
        touched: RwSignal::new(HashSet::new()),
        submitted: RwSignal::new(false),
        errors,
        server_errors: RwSignal::new(ValidationErrors::default()),
    };
    // Effects run only in the browser: before hydration every group is visible (so the
    // form is complete without JavaScript); after it, only the chosen target's fields.
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));

    let action = ServerAction::<CreateRuns>::new();
    follow_created_runs(action, ctx);
    let failure = move || match action.value().get() {
        Some(Err(e)) => Some(format!("The server could not create the run: {e}")),
        _ => None,
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        ctx.submitted.set(true);
        if errors.with_untracked(|e| e.is_empty()) {
            action.dispatch(CreateRuns { form: form.get_untracked() });
        }
    };
    let error_count = move || {
        let n = errors.with(|e| e.0.len());
        (ctx.submitted.get() && n > 0)
            .then(|| format!("{n} field(s) need attention before the run can start."))
    };

    view! {
        <h1>"New run"</h1>
        {note.map(|n| view! { <p class="muted prefill-note" data-testid="prefill-note">{n}</p> })}
        <form class="run-form" method="post" action=CreateRuns::url() on:submit=on_submit novalidate>
            <TargetFields ctx hydrated/>
            <DatasetFields ctx hydrated/>
            <LoadFields ctx/>
            <SamplingFields ctx/>
            <p class="error" role="alert">{error_count}</p>
            <p class="error" role="alert">{failure}</p>
            <button type="submit" id="submit-run" disabled=move || action.pending().get()>
                {move || if action.pending().get() { "Creating…" } else { "Create run" }}
            </button>
        </form>
    }
    // Boxed: inside the re-run page's Suspense the whole form as one type would sit in
    // the server's render future and overflow a worker thread's stack.
    .into_any()
}

/// Once the server created the runs, goes to the comparison (several runs) or the run;
/// field errors from the server land beside their inputs.
fn follow_created_runs(action: ServerAction<CreateRuns>, ctx: FormCtx) {
    let navigate = leptos_router::hooks::use_navigate();
    Effect::new(move |_| match action.value().get() {
        Some(Ok(Ok(created))) => {
            let to = ctx.form.with_untracked(|f| f.created_url(&created));
            navigate(&to, Default::default());
        }
        Some(Ok(Err(server_errors))) => ctx.server_errors.set(server_errors),
        _ => {}
    });
}

/// A checkbox's value in the form: "on" when ticked, as a browser posts it.
fn on(ticked: bool) -> Option<String> {
    ticked.then(|| "on".to_string())
}

/// Fields of the speculative section: it opens when one of them has an error.
const SPECULATIVE_PATHS: [&str; 4] = [
    "target.speculative.draft_model",
    "target.speculative.num_steps",
    "target.speculative.topk",
    "target.speculative.num_draft_tokens",
];

/// A checkbox posting "on" when ticked (the form's booleans).
#[component]
fn Tick(
    ctx: FormCtx,
    name: &'static str,
    text: &'static str,
    get: fn(&RunForm) -> bool,
    set: fn(&mut RunForm, bool),
) -> impl IntoView {
    view! {
        <label>
            <input type="checkbox" name=format!("form[{name}]") id=format!("f-{name}")
                prop:checked=move || ctx.form.with(get)
                on:change=move |ev| {
                    let on = event_target_checked(&ev);
                    ctx.form.update(|f| set(f, on));
                }/>
            {text}
        </label>
    }
}

// Each group is type-erased (`AnyView`): the whole form as one nested type is deeper than
// the compiler's query limit allows.

/// The native engine's EAGLE-3 options and the native ladder.
#[component]
fn SpeculativeFields(ctx: FormCtx) -> AnyView {
    let form = ctx.form;
    view! {
        <details class="advanced" data-testid="speculative-fields"
            open=move || form.with(|f| f.speculative.is_some() || f.native_ladder.is_some()) || SPECULATIVE_PATHS.iter().any(|p| ctx.error(p).is_some())>
            <summary>"Speculative decoding (EAGLE-3)"</summary>
            <div class="field checkbox">
                <Tick ctx name="speculative" text=" EAGLE-3 speculative decoding (the only algorithm latlab's engine runs)"
                    get=|f| f.speculative.is_some() set=|f, v| f.speculative = on(v)/>
            </div>
            <Field ctx label="Draft model" name="draft_model" path="target.speculative.draft_model"
                get=|f| f.draft_model.clone() set=|f, v| f.draft_model = v placeholder="random:<preset>-eagle3"
                hint="random:<preset>-eagle3 (random weights shaped for the model's preset; empty takes the model's own, e.g. random:tiny-eagle3), or a draft checkpoint folder under the worker's file roots."/>
            <Field ctx label="Draft steps" name="spec_num_steps" path="target.speculative.num_steps"
                get=|f| f.spec_num_steps.clone() set=|f, v| f.spec_num_steps = v placeholder="3"
                hint="--speculative-num-steps: draft levels per step."/>
            <Field ctx label="Top-k" name="spec_topk" path="target.speculative.topk"
                get=|f| f.spec_topk.clone() set=|f, v| f.spec_topk = v placeholder="1"
                hint="--speculative-eagle-topk: branches kept per level; 1 drafts a chain."/>
            <Field ctx label="Draft tokens" name="spec_num_draft_tokens" path="target.speculative.num_draft_tokens"
                get=|f| f.spec_num_draft_tokens.clone() set=|f, v| f.spec_num_draft_tokens = v placeholder="4"
                hint="--speculative-num-draft-tokens: nodes verified per step, the root included; at least 2, at most 1 + topk + (steps − 1) × topk²."/>
            <Field ctx label="Synthetic acceptance" name="spec_synthetic" path="target.synthetic_acceptance"
                get=|f| f.spec_synthetic.clone() set=|f, v| f.spec_synthetic = v placeholder="empty: the draft's own proposals"
                hint="Speed without real draft weights: tokens per round (the bonus included) that the rounds accept, from each prompt's recorded greedy continuation. The workload runs twice: the first pass decodes plainly and records (kept as the speculation-off baseline), the second is measured. Labelled synthetic acceptance wherever it shows."/>
            <div class="field checkbox">
                <Tick ctx name="native_ladder" text=" Run the native ladder instead: bf16 → FP8 → FP8 + EAGLE-3 tree (4 steps, topk 4, 16 draft tokens) → FP8 + EAGLE-3 chain (3, 1, 4), one comparison"
                    get=|f| f.native_ladder.is_some() set=|f, v| f.native_ladder = on(v)/>
                <small class="hint">"The rungs set their own weights and speculation; the draft model above names their draft (empty for random models). One concurrency value."</small>
            </div>
        </details>
    }
    .into_any()
}

/// Shows a group while the chosen option is one of `kinds` (always before hydration).
fn shown(
    hydrated: RwSignal<bool>,
    form: RwSignal<RunForm>,
    pick: fn(&RunForm) -> &str,
    kinds: &'static [&'static str],
) -> impl Fn() -> bool + Copy {
    move || !hydrated.get() || form.with(|f| kinds.contains(&pick(f)))
}

#[component]
fn TargetFields(ctx: FormCtx, hydrated: RwSignal<bool>) -> AnyView {
    let form = ctx.form;
    let is = move |kind: &'static [&'static str]| shown(hydrated, form, |f| f.target_kind.as_str(), kind);
    view! {
        <fieldset>
            <legend>"Target"</legend>
            <Choice ctx label="Engine" name="target_kind" path="target.kind"
                options=&[("external", "External OpenAI-compatible URL"), ("native", "latlab native engine"), ("launched", "vLLM / SGLang / TensorRT-LLM (latlab starts it)")]
                get=|f| f.target_kind.clone() set=|f, v| f.target_kind = v/>
            <div class="group" class:hidden=move || !is(&["external"])()>
                <Field ctx label="Base URL" name="base_url" path="target.base_url"
                    get=|f| f.base_url.clone() set=|f, v| f.base_url = v placeholder="http://127.0.0.1:8000"/>
                <Field ctx label="API key variable" name="api_key_env" path="target.api_key_env"
                    get=|f| f.api_key_env.clone() set=|f, v| f.api_key_env = v
                    hint="A LATLAB_KEY_* variable the worker's operator set (e.g. LATLAB_KEY_OPENAI); the key itself is never stored."/>
            </div>
            <div class="group" class:hidden=move || !is(&["native"])()>
                <Field ctx label="Model source" name="model_source" path="target.model_source"
                    get=|f| f.model_source.clone() set=|f, v| f.model_source = v
                    hint="A checkpoint folder under the worker's file roots, or random:<preset> (tiny, qwen3-0.6b, qwen3-8b): random weights, marked as such."/>
                <Choice ctx label="Device" name="device" path="target.device"
                    options=&[("auto", "auto (CUDA if present)"), ("cpu", "CPU"), ("cuda", "CUDA")]
                    get=|f| f.device.clone() set=|f, v| f.device = v/>
                <Choice ctx label="Weights" name="quantization" path="target.quantization"
                    options=&[("none", "as stored (bf16 on CUDA; the CPU engine computes in f32)"), ("fp8", "FP8 (128x128 block scales, quantized at load)")]
                    get=|f| f.quantization.clone() set=|f, v| f.quantization = v
                    hint="FP8 is for the CUDA device; on CPU it runs by reference dequantization, slowly."/>
                <Field ctx label="Max batch" name="max_batch" path="target.max_batch"
                    get=|f| f.max_batch.clone() set=|f, v| f.max_batch = v placeholder="engine default"
                    hint="engine default: 64 on CUDA, 8 on CPU"/>
                <SpeculativeFields ctx/>
            </div>
            <div class="group" class:hidden=move || !is(&["launched"])()>
                <Field ctx label="Engine presets" name="presets" path="target.presets"
                    get=|f| f.presets.clone() set=|f, v| f.presets = v
                    hint="Comma-separated; one run per preset. The seed study's: vllm-bf16, sglang-bf16, trtllm-bf16, sglang-fp8, sglang-fp8-eagle3, recommended, ..."/>
                <ul class="launch-preview mono" data-testid="launch-preview">
                    {move || form.with(RunForm::launch_preview).into_iter().map(|c| view! { <li>{c}</li> }).collect_view()}
                </ul>
            </div>
            <Field ctx label="Model name" name="model" path="model"
                get=|f| f.model.clone() set=|f, v| f.model = v hint="Sent as \"model\" in every request (launched presets use the model they serve; the native engine, left at the default, is named after its model source, e.g. tiny)."/>
            <Choice ctx label="Backend" name="backend" path="backend"
                options=&[("openai-chat", "openai-chat (/v1/chat/completions)"), ("openai", "openai (/v1/completions)")]
                get=|f| f.backend.clone() set=|f, v| f.backend = v/>
        </fieldset>
    }
    .into_any()
}

#[component]
fn DatasetFields(ctx: FormCtx, hydrated: RwSignal<bool>) -> AnyView {
    let ds =
        move |kind: &'static [&'static str]| shown(hydrated, ctx.form, |f| f.dataset_kind.as_str(), kind);
    let form = ctx.form;
    view! {
        <fieldset>
            <legend>"Dataset"</legend>
            <Choice ctx label="Dataset" name="dataset_kind" path="dataset.kind"
                options=&[("sharegpt", "ShareGPT (vLLM sampling)"), ("random", "Random tokens"), ("jsonl", "JSONL file")]
                get=|f| f.dataset_kind.clone() set=|f, v| f.dataset_kind = v/>
            <div class="group" class:hidden=move || !ds(&["sharegpt", "jsonl"])()>
                <Field ctx label="Dataset path" name="dataset_path" path="dataset.path"
                    get=|f| f.dataset_path.clone() set=|f, v| f.dataset_path = v
                    hint="Empty for ShareGPT means the copy setup fetched."/>
            </div>
            <div class="group" class:hidden=move || !ds(&["random"])()>
                <Field ctx label="Input length" name="input_len" path="dataset.input_len"
                    get=|f| f.input_len.clone() set=|f, v| f.input_len = v/>
                <details class="advanced" open=move || form.with(|f| !f.prefix_len.trim().is_empty()) || ctx.error("dataset.prefix_len").is_some()>
                    <summary>"Shared prefix"</summary>
                    <Field ctx label="Prefix length (tokens)" name="prefix_len" path="dataset.prefix_len"
                        get=|f| f.prefix_len.clone() set=|f, v| f.prefix_len = v placeholder="0"
                        hint="Random tokens put before every prompt, the same for all (vLLM's --random-prefix-len): a prefix the server can cache. The input length counts the part after it."/>
                </details>
            </div>
            <Field ctx label="Output length" name="output_len" path="dataset.output_len"
                get=|f| f.output_len.clone() set=|f, v| f.output_len = v
                hint="Required for random; for ShareGPT it overrides each conversation's length."/>
            <Field ctx label="Number of prompts" name="num_prompts" path="num_prompts"
                get=|f| f.num_prompts.clone() set=|f, v| f.num_prompts = v/>
            <Field ctx label="Seed" name="seed" path="seed" get=|f| f.seed.clone() set=|f, v| f.seed = v/>
        </fieldset>
    }
    .into_any()
}

#[component]
fn LoadFields(ctx: FormCtx) -> AnyView {
    let form = ctx.form;
    view! {
        <fieldset>
            <legend>"Load"</legend>
            <Field ctx label="Max concurrency" name="max_concurrency" path="load.max_concurrency"
                get=|f| f.max_concurrency.clone() set=|f, v| f.max_concurrency = v
                hint="Comma-separated values sweep: 1,2,4,8 makes four runs and a comparison."/>
            <Field ctx label="Request rate (req/s)" name="request_rate" path="load.request_rate"
                get=|f| f.request_rate.clone() set=|f, v| f.request_rate = v placeholder="inf"
                hint="Empty or inf releases every request at once. Several values sweep: 1, 2, 4, inf makes four runs and a comparison of latency against throughput (with one max concurrency at most)."/>
            <Choice ctx label="Arrival process" name="arrival" path="load.arrival"
                options=&[("poisson", "Poisson (exponential gaps)"), ("gamma", "gamma, with the burstiness below")]
                get=|f| f.arrival.clone() set=|f, v| f.arrival = v/>
            <Field ctx label="Burstiness" name="burstiness" path="load.burstiness"
                get=|f| f.burstiness.clone() set=|f, v| f.burstiness = v
                hint="Gamma arrivals only: the gaps' shape; below 1 burstier than Poisson, above 1 steadier (1 = Poisson)."/>
            <details class="advanced"
                open=move || form.with(|f| !f.ramp_up_strategy.is_empty()) || ["ramp_up.start_rps", "ramp_up.end_rps"].iter().any(|p| ctx.error(p).is_some())>
                <summary>"Ramp-up"</summary>
                <Choice ctx label="Ramp-up" name="ramp_up_strategy" path="ramp_up.strategy"
                    options=&[("", "none: a fixed rate"), ("linear", "linear"), ("exponential", "exponential")]
                    get=|f| f.ramp_up_strategy.clone() set=|f, v| f.ramp_up_strategy = v
                    hint="The request rate climbs from the start rate (first request) to the end rate (last), as vLLM's --ramp-up-strategy; leave the request rate empty."/>
                <Field ctx label="Start rate (req/s)" name="ramp_up_start_rps" path="ramp_up.start_rps"
                    get=|f| f.ramp_up_start_rps.clone() set=|f, v| f.ramp_up_start_rps = v/>
                <Field ctx label="End rate (req/s)" name="ramp_up_end_rps" path="ramp_up.end_rps"
                    get=|f| f.ramp_up_end_rps.clone() set=|f, v| f.ramp_up_end_rps = v/>
            </details>
            <GoodputFields ctx/>
            <Field ctx label="Warm-up requests" name="warmup_requests" path="warmup_requests"
                get=|f| f.warmup_requests.clone() set=|f, v| f.warmup_requests = v/>
            <Field ctx label="Request timeout (s)" name="request_timeout_s" path="request_timeout_s"
                get=|f| f.request_timeout_s.clone() set=|f, v| f.request_timeout_s = v/>
        </fieldset>
    }
    .into_any()
}

#[component]
fn SamplingFields(ctx: FormCtx) -> AnyView {
    let form = ctx.form;
    view! {
        <fieldset>
            <legend>"Sampling"</legend>
            <Field ctx label="Temperature" name="temperature" path="sampling.temperature"
                get=|f| f.temperature.clone() set=|f, v| f.temperature = v hint="vLLM v0.11 sent 0."/>
            <div class="field checkbox">
                <label>
                    <input type="checkbox" name="form[ignore_eos]" id="f-ignore_eos"
                        prop:checked=move || form.with(|f| f.ignore_eos.is_some())
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            form.update(|f| f.ignore_eos = on.then(|| "on".to_string()));
                        }/>
                    " ignore_eos: generate exactly the output length"
                </label>
                <small class="hint">"Always sent with the random dataset, as vLLM does."</small>
            </div>
            <details class="advanced"
                open=move || form.with(RunForm::has_sampling_parameters) || SAMPLING_PATHS.iter().any(|p| ctx.error(p).is_some())>
                <summary>"More sampling parameters"</summary>
                <Field ctx label="top_p" name="top_p" path="sampling.top_p"
                    get=|f| f.top_p.clone() set=|f, v| f.top_p = v hint="Each is sent only when filled in; empty leaves the server's default."/>
                <Field ctx label="top_k" name="top_k" path="sampling.top_k"
                    get=|f| f.top_k.clone() set=|f, v| f.top_k = v hint="-1 or 0: no limit."/>
                <Field ctx label="min_p" name="min_p" path="sampling.min_p"
                    get=|f| f.min_p.clone() set=|f, v| f.min_p = v/>
                <Field ctx label="frequency_penalty" name="frequency_penalty" path="sampling.frequency_penalty"
                    get=|f| f.frequency_penalty.clone() set=|f, v| f.frequency_penalty = v/>
                <Field ctx label="presence_penalty" name="presence_penalty" path="sampling.presence_penalty"
                    get=|f| f.presence_penalty.clone() set=|f, v| f.presence_penalty = v/>
                <Field ctx label="repetition_penalty" name="repetition_penalty" path="sampling.repetition_penalty"
                    get=|f| f.repetition_penalty.clone() set=|f, v| f.repetition_penalty = v hint="1 = no penalty."/>
            </details>
            <Field ctx label="Label" name="label" path="label" get=|f| f.label.clone() set=|f, v| f.label = v
                hint="Optional; shown in lists and charts."/>
        </fieldset>
    }
    .into_any()
}
