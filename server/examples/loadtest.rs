//! A loopback load test of a running latlab: `clients` concurrent clients for `seconds`,
//! each cycling through the routes (one keep-alive connection per client, as browsers and
//! scripts hold them). Prints requests/s and latency percentiles per route, and fails
//! (exit 1) on any error or non-2xx answer.
//!
//!   cargo run --release -p server --example loadtest -- http://127.0.0.1:3000 200 60 / /runs /c/SLUG /api/runs
//!
//! `scripts/loadtest.sh` builds a release latlab, starts it on the embedded default with
//! the seed study, and runs this against it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

struct RouteStats {
    latencies_us: Vec<u64>,
    errors: Vec<String>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: loadtest BASE_URL CLIENTS SECONDS ROUTE...");
        std::process::exit(2);
    }
    let base = args[0].trim_end_matches('/').to_string();
    let clients: usize = args[1].parse().expect("CLIENTS: a whole number");
    let seconds: f64 = args[2].parse().expect("SECONDS: a number");
    let routes: Vec<String> = args[3..].to_vec();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (base, routes) = (base.clone(), routes.clone());
        tasks.spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap();
            let mut out: Vec<(usize, Result<u64, String>)> = Vec::new();
            // Clients start on different routes so that every route is under load at once.
            let mut i = c % routes.len();
            while Instant::now() < deadline {
                let t = Instant::now();
                let r = client.get(format!("{base}{}", routes[i])).send().await;
                let outcome = match r {
                    Ok(resp) if resp.status().is_success() => match resp.bytes().await {
                        Ok(_) => Ok(t.elapsed().as_micros() as u64),
                        Err(e) => Err(format!("reading the body: {e}")),
                    },
                    Ok(resp) => Err(format!("HTTP {}", resp.status())),
                    Err(e) => Err(e.to_string()),
                };
                out.push((i, outcome));
                i = (i + 1) % routes.len();
            }
            out
        });
    }
    let mut stats: BTreeMap<usize, RouteStats> =
        (0..routes.len()).map(|i| (i, RouteStats { latencies_us: vec![], errors: vec![] })).collect();
    while let Some(done) = tasks.join_next().await {
        for (i, outcome) in done.expect("client task") {
            let s = stats.get_mut(&i).unwrap();
            match outcome {
                Ok(us) => s.latencies_us.push(us),
                Err(e) => s.errors.push(e),
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    println!("{clients} clients, {wall:.1} s, {base}");
    println!("| route | requests | req/s | p50 ms | p99 ms | max ms | errors |");
    println!("|---|---|---|---|---|---|---|");
    let (mut total, mut errors) = (0usize, 0usize);
    for (i, s) in stats.iter_mut() {
        s.latencies_us.sort_unstable();
        let n = s.latencies_us.len() + s.errors.len();
        total += n;
        errors += s.errors.len();
        println!(
            "| {} | {n} | {:.0} | {:.1} | {:.1} | {:.1} | {} |",
            routes[*i],
            n as f64 / wall,
            percentile(&s.latencies_us, 50.0),
            percentile(&s.latencies_us, 99.0),
            percentile(&s.latencies_us, 100.0),
            s.errors.len()
        );
        for e in s.errors.iter().take(3) {
            println!("  error: {e}");
        }
    }
    println!("| all | {total} | {:.0} | | | | {errors} |", total as f64 / wall);
    if errors > 0 {
        std::process::exit(1);
    }
}
