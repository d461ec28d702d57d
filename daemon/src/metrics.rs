//! What `/metrics` shows, in the OpenMetrics text format Prometheus
//! scrapes (through `prometheus-client`, the Prometheus project's own Rust
//! client): requests and latencies per route, commits by outcome, commit
//! announcements received from the database, database pool use, and the
//! warm read models.
//!
//! Routes are labelled by their template (`/v1/{tenant}/search`), never by
//! a tenant's name, so a scrape says nothing about who uses the daemon.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The content type of a scrape.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    database: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DatabaseLabels {
    database: String,
}

/// A daemon's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    commits: Family<OutcomeLabels, Counter>,
    announcements: Family<DatabaseLabels, Counter>,
    /// The announcement counts already added, by database.
    announced: Mutex<HashMap<String, u64>>,
    pool: Family<PoolLabels, Gauge>,
    listening: Family<DatabaseLabels, Gauge>,
    warm_tenants: Gauge,
    model_documents: Gauge,
    postings_held: Gauge,
}

/// Each metric's name (after the `okfit_` prefix) and help text.
const HELP: &str = "\
http_requests HTTP requests answered, by route template, method and status
http_request_duration_seconds Time from a request's arrival to its answer, by route template
commits Changes to knowledge asked for, by outcome: committed, conflict (another commit or a stale hash won), refused or failed
db_announcements_received Commit announcements received from the database (read models then catch up)
db_pool_connections Database connections of this process, idle or lent to a call
db_following_commits 1 while commit announcements arrive from the database, 0 while reads check the head instead
warm_tenants Tenants kept open with their read models
read_model_documents Documents held in the warm read models
search_postings_held Search postings held in memory by the warm read models (the warm-up's, and words searched since)";

/// `metric`, registered as `name` with its line of [`HELP`].
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, metric: M) -> M {
    let help = HELP
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_default();
    registry.register(name, help, metric.clone());
    metric
}

/// Latency buckets: 0.1 ms doubling to about 6.5 s.
fn histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

/// What a scrape reads from the daemon and its store at that moment.
pub struct Now {
    /// Tenants with a warm read model.
    pub warm_tenants: usize,
    /// Documents in those read models.
    pub model_documents: usize,
    /// Search postings those read models hold.
    pub postings_held: usize,
    /// Each PostgreSQL database's pool (none on SQLite).
    pub pools: Vec<(String, okfit_store::postgres::PoolUse)>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered under the `okfit_` prefix.
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("okfit");
        let requests = registered(&mut r, "http_requests", Family::default());
        let by_route = Family::new_with_constructor(histogram as _);
        let latency = registered(&mut r, "http_request_duration_seconds", by_route);
        let commits = registered(&mut r, "commits", Family::default());
        let announcements = registered(&mut r, "db_announcements_received", Family::default());
        let pool = registered(&mut r, "db_pool_connections", Family::default());
        let listening = registered(&mut r, "db_following_commits", Family::default());
        let warm_tenants = registered(&mut r, "warm_tenants", Gauge::default());
        let model_documents = registered(&mut r, "read_model_documents", Gauge::default());
        let postings_held = registered(&mut r, "search_postings_held", Gauge::default());
        let registry = r;
        Metrics {
            registry,
            requests,
            latency,
            commits,
            announcements,
            announced: Mutex::new(HashMap::new()),
            pool,
            listening,
            warm_tenants,
            model_documents,
            postings_held,
        }
    }

    /// Counts one answered request.
    pub fn request(&self, route: &str, method: &str, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                method: method.to_string(),
                status: status.to_string(),
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                route: route.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts one change to knowledge by how it ended.
    pub fn commit(&self, outcome: &str) {
        self.commits
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// The scrape: `now` read just before, then every metric.
    pub fn render(&self, now: Now) -> String {
        self.warm_tenants.set(now.warm_tenants as i64);
        self.model_documents.set(now.model_documents as i64);
        self.postings_held.set(now.postings_held as i64);
        let mut announced = self.announced.lock().unwrap_or_else(|p| p.into_inner());
        for (database, used) in now.pools {
            for (state, n) in [("idle", used.idle), ("lent", used.lent)] {
                self.pool
                    .get_or_create(&PoolLabels {
                        database: database.clone(),
                        state: state.into(),
                    })
                    .set(n as i64);
            }
            let labels = DatabaseLabels { database };
            self.listening
                .get_or_create(&labels)
                .set(i64::from(used.listening));
            let seen = announced.entry(labels.database.clone()).or_insert(0);
            self.announcements
                .get_or_create(&labels)
                .inc_by(used.announcements.saturating_sub(*seen));
            *seen = used.announcements.max(*seen);
        }
        drop(announced);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_shows_requests_commits_and_the_pool() {
        let m = Metrics::new();
        m.request("/v1/{tenant}/search", "POST", 200, Duration::from_millis(2));
        m.commit("conflict");
        let pool = okfit_store::postgres::PoolUse {
            idle: 3,
            lent: 1,
            listening: true,
            announcements: 5,
        };
        let db = "postgres://okfit@db/kb".to_string();
        let now = || Now {
            warm_tenants: 2,
            model_documents: 40,
            postings_held: 900,
            pools: vec![(db.clone(), pool)],
        };
        m.render(now());
        let out = m.render(now());
        for want in [
            r#"okfit_http_requests_total{route="/v1/{tenant}/search",method="POST",status="200"} 1"#,
            r#"okfit_http_request_duration_seconds_count{route="/v1/{tenant}/search"} 1"#,
            r#"okfit_commits_total{outcome="conflict"} 1"#,
            r#"okfit_db_pool_connections{database="postgres://okfit@db/kb",state="idle"} 3"#,
            r#"okfit_db_announcements_received_total{database="postgres://okfit@db/kb"} 5"#,
            r#"okfit_db_following_commits{database="postgres://okfit@db/kb"} 1"#,
            "okfit_warm_tenants 2",
            "okfit_read_model_documents 40",
            "okfit_search_postings_held 900",
            "# EOF",
        ] {
            assert!(out.contains(want), "missing {want} in\n{out}");
        }
    }
}
