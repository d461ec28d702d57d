//! The "reference" corpus of the agent-session bill: a generated warehouse
//! catalogue shaped like Google's OKF samples (v0.2 frontmatter, prose,
//! `# Schema` and `# Joins` sections, links, about 2 KB per concept), 500
//! concepts in one bundle, and twenty fixed questions with their ground
//! truth: which concept and which part of it holds each answer.
//!
//! As in Google's samples, folders are by kind: `datasets/` (10),
//! `tables/` (340), `references/metrics/` (80) and `references/joins/` (70),
//! over ten business domains. Each folder has an `index.md` (`# <Type>`
//! groups of `* [Title](file.md) - description` lines, or `# Subdirectories`).
//! Every file name is unique in the bundle, so a concept's id is its file
//! name without `.md`. Output is deterministic.

use crate::rng::SplitMix64;
use std::fmt::Write as _;

/// The bundle's name in the store.
pub const BUNDLE: &str = "warehouse";

/// Concepts in the corpus.
pub const CONCEPTS: usize = 500;

/// Seed of the generator.
const SEED: u64 = 8_1;

/// One file of the bundle.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Bundle-relative path (`sales/orders.md`).
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// One place an answer can be read: a concept's named section, or its
/// manifest summary (`"summary"`), which the manifest, a search result and
/// the folder's `index.md` line all carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The concept's id (its file name without `.md`).
    pub id: String,
    /// Its bundle-relative path.
    pub path: String,
    /// A section name (`schema`, `joins`, `definition`) or `summary`.
    pub section: String,
    /// Text that must appear in what is read there.
    pub answer: String,
}

/// One part of a question's answer: any one of the places holds it; the
/// first is the canonical one (the one a reader who knows the bundle opens).
#[derive(Debug, Clone)]
pub struct Need {
    /// Alternatives, canonical first.
    pub any_of: Vec<Place>,
}

/// What kind of question it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A column of a named table.
    Schema,
    /// How two named tables join.
    Join,
    /// How a metric is computed, and the key of its source table (two concepts).
    Metric,
    /// What a named table is for (the one-line summary answers it).
    Describe,
    /// Find a table from what it holds, then read its schema.
    Discover,
}

/// One of the twenty questions.
#[derive(Debug, Clone)]
pub struct Question {
    /// The question as a user asks it.
    pub text: String,
    /// What a search-first agent sends as `query`.
    pub query: String,
    /// Its kind.
    pub kind: Kind,
    /// Everything the answer needs.
    pub needs: Vec<Need>,
}

/// The generated corpus.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Every file, concept and navigation files alike, sorted by path.
    pub docs: Vec<Doc>,
    /// The twenty questions.
    pub questions: Vec<Question>,
}

struct Domain {
    name: &'static str,
    title: &'static str,
    entities: [(&'static str, &'static str); 8],
    metrics: [(&'static str, &'static str); 8],
}

const DOMAINS: [Domain; 10] = [
    Domain {
        name: "sales",
        title: "Sales",
        entities: [
            ("orders", "customer orders placed through any channel"),
            (
                "order_items",
                "individual product lines within customer orders",
            ),
            ("quotes", "price quotes issued to prospective buyers"),
            ("opportunities", "open and closed pipeline opportunities"),
            ("discounts", "discounts granted on orders and quotes"),
            (
                "territories",
                "sales territories and their assigned regions",
            ),
            ("sales_reps", "sales representatives and their quotas"),
            (
                "returns",
                "merchandise returned by customers after delivery",
            ),
        ],
        metrics: [
            (
                "average_order_value",
                "revenue divided by the number of orders",
            ),
            ("win_rate", "share of closed opportunities that were won"),
            ("quote_conversion", "share of quotes that became orders"),
            (
                "discount_depth",
                "average discount as a share of list price",
            ),
            (
                "return_rate",
                "share of order items returned within 30 days",
            ),
            ("pipeline_coverage", "open pipeline divided by quota"),
            ("sales_cycle_days", "median days from opportunity to close"),
            (
                "quota_attainment",
                "booked revenue divided by quota per rep",
            ),
        ],
    },
    Domain {
        name: "marketing",
        title: "Marketing",
        entities: [
            (
                "campaigns",
                "marketing campaigns with budgets and flight dates",
            ),
            (
                "ad_clicks",
                "paid advertising clicks with cost and placement",
            ),
            (
                "email_sends",
                "marketing emails sent and their delivery status",
            ),
            ("audiences", "audience segments built for targeting"),
            ("leads", "inbound leads captured from forms and events"),
            ("attributions", "touchpoint credit assigned to conversions"),
            ("promotions", "promotional offers and coupon codes"),
            ("landing_pages", "campaign landing pages and their variants"),
        ],
        metrics: [
            ("cost_per_lead", "campaign spend divided by leads captured"),
            ("click_through_rate", "clicks divided by impressions"),
            (
                "email_open_rate",
                "opened emails divided by delivered emails",
            ),
            (
                "lead_velocity",
                "month-over-month growth of qualified leads",
            ),
            (
                "return_on_ad_spend",
                "attributed revenue divided by ad spend",
            ),
            ("coupon_redemption", "share of issued coupons redeemed"),
            (
                "bounce_rate",
                "single-page visits divided by landing visits",
            ),
            ("audience_reach", "distinct people reached per campaign"),
        ],
    },
    Domain {
        name: "finance",
        title: "Finance",
        entities: [
            ("invoices", "invoices issued to customers with due dates"),
            ("ledger_entries", "double-entry general ledger postings"),
            ("budgets", "approved budgets per cost center and month"),
            ("forecasts", "rolling financial forecasts by scenario"),
            ("gl_accounts", "chart of accounts for the general ledger"),
            ("fx_rates", "daily foreign exchange rates against USD"),
            ("expenses", "employee expense claims and approvals"),
            ("tax_lines", "tax amounts computed per invoice line"),
        ],
        metrics: [
            (
                "days_sales_outstanding",
                "receivables divided by daily revenue",
            ),
            ("gross_margin", "revenue minus cost of goods, over revenue"),
            (
                "budget_variance",
                "actual spend minus budget per cost center",
            ),
            (
                "forecast_accuracy",
                "one minus absolute forecast error share",
            ),
            ("operating_expense_ratio", "operating expenses over revenue"),
            (
                "effective_tax_rate",
                "tax expense divided by pre-tax income",
            ),
            ("expense_approval_time", "median hours to approve a claim"),
            ("fx_exposure", "open balances by currency converted to USD"),
        ],
    },
    Domain {
        name: "logistics",
        title: "Logistics",
        entities: [
            (
                "shipments",
                "outbound shipments from warehouses to customers",
            ),
            ("carriers", "shipping carriers and their service levels"),
            ("routes", "planned delivery routes and their stops"),
            ("parcels", "individual parcels within shipments"),
            ("warehouses", "distribution warehouses and their capacity"),
            (
                "deliveries",
                "completed delivery attempts at customer doors",
            ),
            ("freight_costs", "freight invoices allocated to shipments"),
            ("tracking_scans", "carrier tracking scan events for parcels"),
        ],
        metrics: [
            (
                "on_time_delivery",
                "deliveries on or before the promised date",
            ),
            ("cost_per_parcel", "freight cost divided by parcels shipped"),
            (
                "first_attempt_success",
                "deliveries completed on first attempt",
            ),
            (
                "warehouse_utilization",
                "occupied capacity over total capacity",
            ),
            ("transit_time_days", "median days from ship to delivery"),
            (
                "damage_rate",
                "parcels reported damaged over parcels shipped",
            ),
            ("route_density", "stops per route-hour"),
            ("carrier_claim_rate", "claims filed per thousand shipments"),
        ],
    },
    Domain {
        name: "support",
        title: "Support",
        entities: [
            ("tickets", "customer support tickets across all channels"),
            ("support_agents", "support agents, their teams and skills"),
            (
                "escalations",
                "tickets escalated to engineering or management",
            ),
            ("chats", "live chat conversations with customers"),
            ("csat_surveys", "customer satisfaction survey responses"),
            ("queues", "routing queues that tickets wait in"),
            ("sla_breaches", "tickets that missed a service-level target"),
            ("macros", "canned replies agents apply to tickets"),
        ],
        metrics: [
            ("first_response_time", "median minutes to first agent reply"),
            ("resolution_time", "median hours from open to solved"),
            ("csat_score", "satisfied responses over all responses"),
            ("escalation_rate", "escalated tickets over all tickets"),
            ("sla_attainment", "tickets within target over all tickets"),
            ("backlog_age", "median age of open tickets in hours"),
            ("contacts_per_order", "support contacts per thousand orders"),
            ("macro_usage", "share of replies sent with a macro"),
        ],
    },
    Domain {
        name: "product",
        title: "Product",
        entities: [
            ("features", "product features and their owners"),
            ("releases", "software releases and their rollout state"),
            ("experiments", "A/B experiments with variants and exposure"),
            (
                "feature_flags",
                "feature flag definitions and targeting rules",
            ),
            ("bugs", "reported product defects and their severity"),
            ("roadmap_items", "planned roadmap items by quarter"),
            ("usage_events", "product usage events emitted by clients"),
            ("app_sessions", "application sessions of signed-in users"),
        ],
        metrics: [
            (
                "daily_active_users",
                "distinct users with a session per day",
            ),
            ("feature_adoption", "users of a feature over active users"),
            ("experiment_lift", "relative change of the primary metric"),
            (
                "crash_free_sessions",
                "sessions without a crash over sessions",
            ),
            ("bug_escape_rate", "bugs found after release over all bugs"),
            ("release_frequency", "production releases per week"),
            ("session_length", "median minutes per application session"),
            ("stickiness", "daily active users over monthly active users"),
        ],
    },
    Domain {
        name: "people",
        title: "People",
        entities: [
            ("employees", "current and former employees"),
            ("departments", "departments and their reporting lines"),
            ("payroll_runs", "payroll runs and the amounts paid"),
            ("hires", "accepted offers and start dates"),
            ("terminations", "employment terminations and reasons"),
            (
                "performance_reviews",
                "performance review cycles and ratings",
            ),
            ("trainings", "completed training courses per employee"),
            ("absences", "recorded absences and leave types"),
        ],
        metrics: [
            ("headcount", "active employees at month end"),
            ("attrition_rate", "terminations over average headcount"),
            ("time_to_hire", "median days from requisition to offer"),
            ("training_completion", "required courses completed on time"),
            ("absence_rate", "absent days over scheduled days"),
            ("payroll_cost", "gross pay plus employer taxes per month"),
            ("promotion_rate", "promotions over average headcount"),
            ("span_of_control", "direct reports per manager"),
        ],
    },
    Domain {
        name: "inventory",
        title: "Inventory",
        entities: [
            ("stock_levels", "on-hand stock per SKU and location"),
            ("skus", "stock keeping units and their attributes"),
            ("suppliers", "suppliers and their lead times"),
            ("purchase_orders", "purchase orders issued to suppliers"),
            ("stock_moves", "movements of stock between locations"),
            ("storage_bins", "storage bins inside warehouses"),
            ("cycle_counts", "periodic physical stock counts"),
            ("reorder_points", "reorder thresholds per SKU"),
        ],
        metrics: [
            (
                "inventory_turnover",
                "cost of goods sold over average inventory",
            ),
            ("stockout_rate", "SKU-days at zero stock over SKU-days"),
            ("supplier_fill_rate", "units received over units ordered"),
            ("days_of_supply", "on-hand units over daily demand"),
            ("count_accuracy", "counted units matching the system"),
            ("shrinkage", "unexplained stock loss as share of value"),
            ("purchase_lead_time", "median days from order to receipt"),
            ("excess_stock_value", "value of stock above target levels"),
        ],
    },
    Domain {
        name: "web",
        title: "Web",
        entities: [
            ("page_views", "page views on the public website"),
            ("visits", "website visits grouped from page views"),
            ("site_searches", "searches run in the site search box"),
            ("carts", "shopping carts and their contents"),
            ("checkouts", "checkout attempts and their outcome"),
            ("referrers", "referring domains and campaigns"),
            ("devices", "browsers and devices seen on the site"),
            ("web_errors", "client-side errors reported by browsers"),
        ],
        metrics: [
            ("conversion_rate", "visits with an order over all visits"),
            ("cart_abandonment", "carts without checkout over all carts"),
            ("pages_per_visit", "page views divided by visits"),
            ("search_exit_rate", "searches followed by leaving the site"),
            ("checkout_success", "successful checkouts over attempts"),
            ("error_rate", "page views with an error over page views"),
            ("new_visitor_share", "first-time visitors over all visitors"),
            ("mobile_share", "visits from mobile devices over visits"),
        ],
    },
    Domain {
        name: "billing",
        title: "Billing",
        entities: [
            ("subscriptions", "customer subscriptions and their plans"),
            ("payments", "card and bank payments collected"),
            ("refunds", "money returned to customers after payment"),
            ("plans", "price plans and their billing periods"),
            ("credits", "account credits granted to customers"),
            ("dunning_attempts", "retries of failed subscription charges"),
            ("usage_charges", "metered usage billed per period"),
            ("payment_methods", "stored cards and bank mandates"),
        ],
        metrics: [
            (
                "monthly_recurring_revenue",
                "sum of active subscription fees",
            ),
            (
                "net_revenue_retention",
                "recurring revenue kept from a cohort",
            ),
            (
                "payment_failure_rate",
                "failed charges over attempted charges",
            ),
            ("refund_rate", "refunded amount over collected amount"),
            ("dunning_recovery", "failed charges later recovered"),
            (
                "average_revenue_per_account",
                "revenue over paying accounts",
            ),
            ("churned_revenue", "recurring revenue lost to cancellations"),
            ("credit_liability", "unused credits outstanding"),
        ],
    },
];

const DATASETS: &str = "datasets";
const TABLES: &str = "tables";
const METRICS: &str = "references/metrics";
const JOINS: &str = "references/joins";

/// Table-name suffixes and what a row is, per variant.
const VARIANTS: [(&str, &str, &str); 5] = [
    ("", "", "one row per {s}"),
    ("_daily", " Daily", "one row per {s} per calendar day"),
    ("_history", " History", "one row per change to a {s}"),
    (
        "_snapshot",
        " Snapshot",
        "one row per {s} as of the nightly snapshot",
    ),
    ("_events", " Events", "one row per event recorded for a {s}"),
];

/// Attribute columns a table draws from.
const COLUMNS: [(&str, &str); 16] = [
    ("created_at", "Timestamp when the row was created, in UTC."),
    (
        "updated_at",
        "Timestamp of the last change to the row, in UTC.",
    ),
    ("status_code", "Lifecycle state: OPEN, CLOSED or VOID."),
    (
        "amount_minor",
        "Amount in minor currency units (cents), before tax.",
    ),
    ("currency_code", "ISO 4217 code of the amount's currency."),
    (
        "region_code",
        "Two-letter code of the owning business region.",
    ),
    (
        "channel",
        "Channel the row came from: web, store, partner or phone.",
    ),
    ("quantity", "Number of units; negative for reversals."),
    (
        "is_test",
        "TRUE for rows made by internal test accounts; exclude them from reporting.",
    ),
    ("source_system", "Upstream system that produced the row."),
    (
        "owner_email",
        "Work email of the accountable owner; may be NULL.",
    ),
    ("score", "Model score between 0 and 1, refreshed nightly."),
    (
        "deleted_at",
        "Soft-deletion time; NULL while the row is live.",
    ),
    ("latency_ms", "Processing latency in milliseconds."),
    (
        "country_code",
        "ISO 3166-1 alpha-2 country of the customer.",
    ),
    ("priority", "Priority from 1 (highest) to 4."),
];

const FILLER: [&str; 12] = [
    "It is loaded by the nightly warehouse pipeline and is complete up to the previous day.",
    "Late-arriving rows are merged for seven days, so recent figures can still move.",
    "Analysts should filter out test rows before reporting.",
    "The table is partitioned by creation date, so filtering on it keeps queries cheap.",
    "Amounts are stored in minor units to avoid rounding errors.",
    "Personal data is pseudonymised before it lands here.",
    "Backfills are announced in the data platform channel before they run.",
    "Row counts are checked against the source every morning.",
    "Deleted rows are kept with a deletion timestamp rather than removed.",
    "It replaces an older extract that was retired last year.",
    "Downstream dashboards read it through the semantic layer.",
    "The owning team reviews its documentation every quarter.",
];

struct Table {
    domain: usize,
    name: String,
    title: String,
    entity: &'static str,
    singular: String,
    description: String,
    key: String,
    columns: Vec<(String, String)>,
    joins: Vec<(usize, String)>,
}

struct Metric {
    domain: usize,
    name: String,
    title: String,
    what: &'static str,
    table: usize,
}

fn singular(entity: &str) -> String {
    let last = entity.rsplit('_').next().unwrap_or(entity);
    let stem = &entity[..entity.len() - last.len()];
    let one = if let Some(s) = last.strip_suffix("ies") {
        format!("{s}y")
    } else if last.ends_with("sses") || last.ends_with("xes") {
        last[..last.len() - 2].to_string()
    } else if let Some(s) = last.strip_suffix('s') {
        s.to_string()
    } else {
        last.to_string()
    };
    format!("{stem}{one}")
}

fn title_case(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect::<String>(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace("Sla ", "SLA ")
        .replace("Csat", "CSAT")
        .replace("Gl ", "GL ")
        .replace("Fx ", "FX ")
        .replace("Skus", "SKUs")
}

fn words(text: &str) -> String {
    text.replace('_', " ")
}

fn frontmatter(
    out: &mut String,
    ty: &str,
    title: &str,
    description: &str,
    tags: &[&str],
    at: &str,
) {
    let _ = writeln!(out, "---\ntype: {ty}");
    let _ = writeln!(
        out,
        "resource: https://warehouse.example.com/catalog/{}",
        title.to_lowercase().replace(' ', "-")
    );
    let _ = writeln!(out, "title: {}", quoted(title));
    let _ = writeln!(out, "description: {}", quoted(description));
    out.push_str("tags:\n");
    for t in tags {
        let _ = writeln!(out, "- {t}");
    }
    let _ = writeln!(
        out,
        "generated:\n  by: reference_agent/okfit-bench\n  at: '{at}'"
    );
    let _ = writeln!(
        out,
        "sources:\n- id: catalog\n  resource: https://warehouse.example.com/catalog\n  title: Warehouse catalog export\n---\n"
    );
}

/// A YAML single-quoted scalar.
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn timestamp(rng: &mut SplitMix64) -> String {
    format!(
        "2026-07-{:02}T{:02}:{:02}:{:02}+00:00",
        rng.range(1, 29),
        rng.below(24),
        rng.below(60),
        rng.below(60)
    )
}

fn tables_and_metrics() -> (Vec<Table>, Vec<Metric>) {
    let mut tables = vec![];
    let mut metrics = vec![];
    for (d, dom) in DOMAINS.iter().enumerate() {
        let first = tables.len();
        let mut rng = SplitMix64::stream(SEED, d as u64, 1);
        for (v, (suffix, tsuffix, row)) in VARIANTS.iter().enumerate() {
            for (e, (entity, holds)) in dom.entities.iter().enumerate() {
                // 34 tables: every entity in the first four variants, two with events.
                if v == 4 && e >= 2 {
                    continue;
                }
                let name = format!("{entity}{suffix}");
                let s = singular(entity);
                let row = row.replace("{s}", &words(&s));
                let description = match v {
                    0 => format!("{} of the {} domain, {row}.", cap(holds), dom.name),
                    _ => format!("{}{}: {row}.", cap(holds), tsuffix.to_lowercase()),
                };
                let key = format!("{s}_id");
                let mut cols: Vec<(String, String)> = vec![(
                    key.clone(),
                    format!("Unique identifier of the {}.", words(&s)),
                )];
                if v == 1 || v == 3 {
                    cols.push((
                        "snapshot_date".into(),
                        "Calendar date of the row, in UTC; with the key it identifies the row."
                            .into(),
                    ));
                }
                if v == 2 || v == 4 {
                    cols.push((
                        "valid_from".into(),
                        "Time the recorded change took effect, in UTC.".into(),
                    ));
                }
                let n = rng.range(5, 8) as usize;
                let start = rng.below(COLUMNS.len() as u64) as usize;
                for i in 0..n {
                    let (c, text) = COLUMNS[(start + i * 3) % COLUMNS.len()];
                    cols.push((c.into(), text.into()));
                }
                tables.push(Table {
                    domain: d,
                    name: name.clone(),
                    title: title_case(&name),
                    entity,
                    singular: s,
                    description,
                    key,
                    columns: cols,
                    joins: vec![],
                });
            }
        }
        // Joins: each table joins its base entity table and one or two more.
        let last = tables.len();
        for t in first..last {
            let base = first
                + dom
                    .entities
                    .iter()
                    .position(|(e, _)| *e == tables[t].entity)
                    .unwrap_or(0);
            let mut partners = vec![];
            if t != base {
                partners.push(base);
            }
            while partners.len() < 2 + (t % 2) {
                let p = first + rng.below(8) as usize;
                if p != t && !partners.contains(&p) {
                    partners.push(p);
                }
            }
            for p in partners {
                let fk = tables[p].key.clone();
                if !tables[t].columns.iter().any(|(c, _)| *c == fk) {
                    let what = format!(
                        "Identifier of the {}; joins to {}.",
                        words(&tables[p].singular),
                        tables[p].name
                    );
                    tables[t].columns.push((fk.clone(), what));
                }
                tables[t].joins.push((p, fk));
            }
        }
        for (name, what) in dom.metrics.iter() {
            let table = first + rng.below(8) as usize;
            metrics.push(Metric {
                domain: d,
                name: name.to_string(),
                title: title_case(name),
                what,
                table,
            });
        }
    }
    (tables, metrics)
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn table_doc(t: &Table, tables: &[Table], rng: &mut SplitMix64) -> String {
    let dom = &DOMAINS[t.domain];
    let mut out = String::new();
    frontmatter(
        &mut out,
        "BigQuery Table",
        &t.title,
        &t.description,
        &[dom.name, "table", &t.singular],
        &timestamp(rng),
    );
    let _ = write!(
        out,
        "The `{}` table in the [{} dataset](../datasets/{}_dataset.md) holds {}. ",
        t.name,
        dom.title,
        dom.name,
        t.description.trim_end_matches('.').to_lowercase()
    );
    for _ in 0..3 {
        out.push_str(FILLER[rng.below(FILLER.len() as u64) as usize]);
        out.push(' ');
    }
    let (p, fk) = &t.joins[0];
    let _ = writeln!(
        out,
        "Join it with [{}]({}.md) on `{fk}` for {} details.[^catalog]\n",
        tables[*p].title,
        tables[*p].name,
        words(&tables[*p].singular)
    );
    out.push_str("# Schema\n\n");
    for (c, text) in &t.columns {
        let _ = writeln!(out, "- `{c}`: {text}");
    }
    out.push_str("\n# Joins\n\n");
    for (p, fk) in &t.joins {
        let _ = writeln!(
            out,
            "- [{}]({}.md): `ON {}.{fk} = {}.{fk}`",
            tables[*p].title, tables[*p].name, t.name, tables[*p].name
        );
    }
    let _ = writeln!(
        out,
        "\n# Common query patterns\n\n1. **Rows per {s}, busiest first:**\n\n```sql\nSELECT {key}, COUNT(*) AS n\nFROM `warehouse.{d}.{n}`\nWHERE NOT is_test\nGROUP BY {key}\nORDER BY n DESC\nLIMIT 10;\n```\n\n2. **With {p} details:**\n\n```sql\nSELECT a.*, b.*\nFROM `warehouse.{d}.{n}` AS a\nJOIN `warehouse.{d}.{pn}` AS b\n  ON a.{fk} = b.{fk}\nWHERE a.created_at >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 30 DAY)\nLIMIT 100;\n```\n\n[^catalog]: Column descriptions come from the warehouse catalog export.",
        key = t.key,
        d = dom.name,
        n = t.name,
        s = words(&t.singular),
        p = words(&tables[*p].singular),
        pn = tables[*p].name,
    );
    out
}

fn metric_doc(m: &Metric, tables: &[Table], rng: &mut SplitMix64) -> String {
    let dom = &DOMAINS[m.domain];
    let t = &tables[m.table];
    let mut out = String::new();
    let description = format!("{}: {}.", m.title, m.what);
    frontmatter(
        &mut out,
        "Metric",
        &m.title,
        &description,
        &[dom.name, "metric"],
        &timestamp(rng),
    );
    let _ = writeln!(
        out,
        "{} measures the {} for the {} domain. {} It is computed from [{}](../../tables/{}.md).[^catalog]\n",
        m.title,
        m.what,
        dom.name,
        FILLER[rng.below(FILLER.len() as u64) as usize],
        t.title,
        t.name
    );
    let _ = writeln!(
        out,
        "# Definition\n\n{} is the {}, computed over rows of `{}` with `is_test` false.\n\n```sql\nSELECT DATE_TRUNC(created_at, MONTH) AS month,\n       SAFE_DIVIDE(SUM(amount_minor), COUNT(DISTINCT {})) AS {}\nFROM `warehouse.{}.{}`\nGROUP BY month;\n```\n",
        m.title, m.what, t.name, t.key, m.name, dom.name, t.name
    );
    let _ = writeln!(
        out,
        "# Caveats\n\n- {}\n- Figures for the current month are provisional until the books close.\n\n[^catalog]: Definition agreed with the {} team.",
        FILLER[rng.below(FILLER.len() as u64) as usize],
        dom.name
    );
    out
}

fn join_doc(a: &Table, b: &Table, fk: &str, rng: &mut SplitMix64) -> (String, String, String) {
    let dom = &DOMAINS[a.domain];
    let name = format!("{}__{}", a.name, b.name);
    let title = format!("{} to {} Join", a.title, b.title);
    let description = format!("Join path between the {} and {} tables.", a.name, b.name);
    let mut out = String::new();
    frontmatter(
        &mut out,
        "Reference",
        &title,
        &description,
        &[dom.name, "join"],
        &timestamp(rng),
    );
    let _ = writeln!(
        out,
        "# {} ↔ {}\n\nJoin relationship between [{}](../../tables/{}.md) and [{}](../../tables/{}.md).\n\n## Condition\n\n```sql\nON {}.{fk} = {}.{fk}\n```\n\n## Usage\n\nUse this join to bring {} attributes onto {} rows. {}\n\n[^catalog]: Verified against the warehouse catalog export.",
        a.name, b.name, a.title, a.name, b.title, b.name, a.name, b.name,
        words(&b.singular), words(&a.singular),
        FILLER[rng.below(FILLER.len() as u64) as usize]
    );
    (name, description, out)
}

fn place(id: &str, folder: &str, section: &str, answer: String) -> Place {
    Place {
        id: id.to_string(),
        path: format!("{folder}/{id}.md"),
        section: section.to_string(),
        answer,
    }
}

/// Generates the corpus.
pub fn corpus() -> Corpus {
    let (tables, metrics) = tables_and_metrics();
    let mut docs = vec![];
    let mut joins: Vec<(usize, usize, String, String)> = vec![]; // (a, b, name, description)
                                                                 // (folder, type heading, title, file, description) for the folder indexes.
    let mut listed: Vec<(&str, &str, String, String, String)> = vec![];
    for (d, dom) in DOMAINS.iter().enumerate() {
        let mut rng = SplitMix64::stream(SEED, d as u64, 2);
        let dom_tables: Vec<usize> = (0..tables.len())
            .filter(|&t| tables[t].domain == d)
            .collect();
        // The dataset.
        let mut text = String::new();
        let description = format!(
            "The {} dataset: {} tables about {}.",
            dom.name,
            dom_tables.len(),
            dom.entities
                .iter()
                .take(4)
                .map(|(e, _)| words(e))
                .collect::<Vec<_>>()
                .join(", ")
        );
        frontmatter(
            &mut text,
            "BigQuery Dataset",
            &format!("{} Dataset", dom.title),
            &description,
            &[dom.name, "dataset"],
            &timestamp(&mut rng),
        );
        let _ = writeln!(
            text,
            "The {} dataset collects the warehouse tables owned by the {} team. {}\n\n# Tables\n",
            dom.name,
            dom.name,
            FILLER[rng.below(FILLER.len() as u64) as usize]
        );
        for &t in dom_tables.iter().take(12) {
            let _ = writeln!(
                text,
                "- [{}](../tables/{}.md)",
                tables[t].title, tables[t].name
            );
        }
        let _ = writeln!(text, "\nThe folder's index lists every table.");
        docs.push(Doc {
            path: format!("datasets/{}_dataset.md", dom.name),
            text,
        });
        listed.push((
            DATASETS,
            "BigQuery Dataset",
            format!("{} Dataset", dom.title),
            format!("{}_dataset.md", dom.name),
            description,
        ));
        for &t in &dom_tables {
            let text = table_doc(&tables[t], &tables, &mut rng);
            docs.push(Doc {
                path: format!("tables/{}.md", tables[t].name),
                text,
            });
            listed.push((
                TABLES,
                "BigQuery Table",
                tables[t].title.clone(),
                format!("{}.md", tables[t].name),
                tables[t].description.clone(),
            ));
        }
        for m in metrics.iter().filter(|m| m.domain == d) {
            let text = metric_doc(m, &tables, &mut rng);
            docs.push(Doc {
                path: format!("references/metrics/{}.md", m.name),
                text,
            });
            listed.push((
                METRICS,
                "Metric",
                m.title.clone(),
                format!("{}.md", m.name),
                format!("{}: {}.", m.title, m.what),
            ));
        }
        // Seven join references: the first join of the first seven base-variant tables.
        for &t in dom_tables.iter().skip(1).take(7) {
            let (p, fk) = &tables[t].joins[0];
            let (name, description, text) = join_doc(&tables[t], &tables[*p], fk, &mut rng);
            docs.push(Doc {
                path: format!("references/joins/{name}.md"),
                text,
            });
            listed.push((
                JOINS,
                "Reference",
                format!("{} to {} Join", tables[t].title, tables[*p].title),
                format!("{name}.md"),
                description.clone(),
            ));
            joins.push((t, *p, name, description));
        }
    }
    // Folder indexes, then `references/index.md` and the root index.
    let about = |folder: &str| -> String {
        let mut kinds: Vec<&str> = listed
            .iter()
            .filter(|l| l.0 == folder)
            .map(|l| l.1)
            .collect();
        kinds.dedup();
        let n = listed.iter().filter(|l| l.0 == folder).count();
        format!("{n} concepts: {}.", kinds.join(", "))
    };
    for folder in [DATASETS, TABLES, METRICS, JOINS] {
        let mut rows: Vec<&(&str, &str, String, String, String)> =
            listed.iter().filter(|l| l.0 == folder).collect();
        rows.sort_by(|a, b| (a.1, &a.2).cmp(&(b.1, &b.2)));
        let mut index = String::new();
        let mut heading = "";
        for (_, ty, title, file, description) in rows {
            if *ty != heading {
                if !heading.is_empty() {
                    index.push('\n');
                }
                let _ = writeln!(index, "# {ty}\n");
                heading = ty;
            }
            let _ = writeln!(index, "* [{title}]({file}) - {description}");
        }
        docs.push(Doc {
            path: format!("{folder}/index.md"),
            text: index,
        });
    }
    docs.push(Doc {
        path: "references/index.md".into(),
        text: format!(
            "# Subdirectories\n\n* [joins](joins/index.md) - Join paths between tables; {}\n* [metrics](metrics/index.md) - Metric definitions; {}\n",
            about(JOINS),
            about(METRICS)
        ),
    });
    docs.push(Doc {
        path: "index.md".into(),
        text: format!(
            "---\nokf_version: \"0.2\"\n---\n\n# Subdirectories\n\n* [datasets](datasets/index.md) - The warehouse datasets, one per domain ({}); {}\n* [references](references/index.md) - Join paths and metric definitions.\n* [tables](tables/index.md) - Every warehouse table; {}\n",
            DOMAINS.iter().map(|d| d.name).collect::<Vec<_>>().join(", "),
            about(DATASETS),
            about(TABLES)
        ),
    });
    docs.sort_by(|a, b| a.path.cmp(&b.path));
    let questions = questions(&tables, &metrics, &joins);
    Corpus { docs, questions }
}

fn schema_line(t: &Table, col: &str) -> String {
    let text = t
        .columns
        .iter()
        .find(|(c, _)| c == col)
        .map(|(_, x)| x.as_str())
        .unwrap_or_default();
    format!("- `{col}`: {text}")
}

fn questions(
    tables: &[Table],
    metrics: &[Metric],
    joins: &[(usize, usize, String, String)],
) -> Vec<Question> {
    let folder = |_: &Table| TABLES;
    let table_at = |d: usize, i: usize| {
        let all: Vec<usize> = (0..tables.len())
            .filter(|&t| tables[t].domain == d)
            .collect();
        all[i % all.len()]
    };
    let mut qs = vec![];
    // Six schema questions: a column of a named table.
    for (d, i) in [(0, 9), (2, 3), (4, 17), (6, 1), (8, 25), (9, 12)] {
        let t = &tables[table_at(d, i)];
        let (col, text) = &t.columns[t.columns.len() / 2];
        let _ = text;
        qs.push(Question {
            text: format!("In {}, what does the column `{col}` hold?", t.title),
            query: format!("{} {}", t.title.to_lowercase(), words(col)),
            kind: Kind::Schema,
            needs: vec![Need {
                any_of: vec![place(&t.name, folder(t), "schema", schema_line(t, col))],
            }],
        });
    }
    // Five join questions: how a named table joins another.
    for (d, j) in [(1, 2), (3, 5), (5, 0), (7, 4), (9, 6)] {
        let (a, b, name, _) = &joins[d * 7 + j];
        let (ta, tb) = (&tables[*a], &tables[*b]);
        let fk = &ta.joins[0].1;
        let on = format!("ON {}.{fk} = {}.{fk}", ta.name, tb.name);
        qs.push(Question {
            text: format!("How do I join {} to {}?", ta.title, tb.title),
            query: format!("join {} {}", words(&ta.name), words(&tb.name)),
            kind: Kind::Join,
            needs: vec![Need {
                any_of: vec![
                    place(&ta.name, folder(ta), "joins", format!("`{on}`")),
                    place(name, JOINS, "condition", on.clone()),
                ],
            }],
        });
    }
    // Four metric questions: the definition, then the key of the source table.
    for (d, m) in [(0, 1), (3, 0), (6, 5), (8, 0)] {
        let metric = &metrics[d * 8 + m];
        let t = &tables[metric.table];
        qs.push(Question {
            text: format!(
                "How is {} calculated, and what is the key of the table it is computed from?",
                metric.title
            ),
            query: format!("{} definition", metric.title.to_lowercase()),
            kind: Kind::Metric,
            needs: vec![
                Need {
                    any_of: vec![place(
                        &metric.name,
                        METRICS,
                        "definition",
                        format!("{} is the {}", metric.title, metric.what),
                    )],
                },
                Need {
                    any_of: vec![place(&t.name, folder(t), "schema", schema_line(t, &t.key))],
                },
            ],
        });
    }
    // Three description questions: the one-line summary answers them.
    for (d, i) in [(1, 14), (5, 22), (7, 30)] {
        let t = &tables[table_at(d, i)];
        qs.push(Question {
            text: format!("What is the {} table for?", t.title),
            query: t.title.to_lowercase(),
            kind: Kind::Describe,
            needs: vec![Need {
                any_of: vec![place(&t.name, folder(t), "summary", t.description.clone())],
            }],
        });
    }
    // Two discovery questions: named by what the table holds, not its name.
    for (d, e) in [(2, 7), (4, 4)] {
        let t = &tables[table_at(d, e)];
        let holds = DOMAINS[d].entities[e].1;
        qs.push(Question {
            text: format!("Which table has {holds}, and what is its primary key?"),
            query: holds.to_string(),
            kind: Kind::Discover,
            needs: vec![Need {
                any_of: vec![place(&t.name, folder(t), "schema", schema_line(t, &t.key))],
            }],
        });
    }
    qs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_determinism() {
        let c = corpus();
        let concepts: Vec<&Doc> = c
            .docs
            .iter()
            .filter(|d| !d.path.ends_with("index.md"))
            .collect();
        assert_eq!(concepts.len(), CONCEPTS);
        let mut names: Vec<&str> = concepts
            .iter()
            .map(|d| d.path.rsplit('/').next().unwrap_or(""))
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CONCEPTS, "file names are unique");
        let bytes: usize = concepts.iter().map(|d| d.text.len()).sum();
        let mean = bytes / CONCEPTS;
        assert!(
            (1500..2600).contains(&mean),
            "about 2 KB per concept, got {mean}"
        );
        assert_eq!(c.questions.len(), 20);
        let again = corpus();
        assert!(c
            .docs
            .iter()
            .zip(&again.docs)
            .all(|(a, b)| a.path == b.path && a.text == b.text));
    }

    #[test]
    fn every_answer_is_in_its_place() {
        let c = corpus();
        for q in &c.questions {
            for need in &q.needs {
                for p in &need.any_of {
                    let doc = c
                        .docs
                        .iter()
                        .find(|d| d.path == p.path)
                        .unwrap_or_else(|| panic!("{} is missing", p.path));
                    assert!(
                        doc.text.contains(&p.answer),
                        "{:?} not in {}",
                        p.answer,
                        p.path
                    );
                }
            }
        }
    }

    #[test]
    fn singulars() {
        for (plural, one) in [
            ("order_items", "order_item"),
            ("opportunities", "opportunity"),
            ("sales_reps", "sales_rep"),
            ("headcount", "headcount"),
        ] {
            assert_eq!(singular(plural), one);
        }
    }
}
