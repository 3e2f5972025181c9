//! `ringtrace export --format parquet|otlp`: a trace taken beyond one
//! machine, as tables for SQL engines or as span trees sent to an
//! OpenTelemetry collector, with the options those two take.

use ringtrace_export::Trace;
use std::error::Error;
use std::path::Path;

/// The options of `export` that only `parquet` and `otlp` take, and of
/// `record` sending OTLP as it drains (`record --endpoint`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FleetArgs {
    /// OTLP (`export --format otlp`, `record`): the collector's OTLP/HTTP endpoint, e.g.
    /// `http://127.0.0.1:4318` (spans go to /v1/traces, log records to
    /// /v1/logs) or a URL ending in /v1/traces.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// OTLP (`export --format otlp`, `record`): send only the span trees a rule keeps
    /// (repeatable; a tree is kept when any rule keeps it; all are kept
    /// without one): `error` (a span failed), `slower:DURATION` (a span
    /// lasted longer, e.g. slower:250ms), `name:SPAN_NAME`, `fraction:F`
    /// (that share of the others, chosen by trace id).
    #[arg(long, value_name = "RULE")]
    pub keep: Vec<String>,
    /// OTLP (`export --format otlp`, `record`): the `service.name` of every process (its
    /// command name when not given).
    #[arg(long, value_name = "NAME")]
    pub service_name: Option<String>,
    /// OTLP (`export --format otlp`, `record --endpoint`) and Parquet
    /// (`export --format parquet`): the host name the trace is from (this
    /// machine's when not given): `host.name` of the OTLP resource, the
    /// `host` column of every Parquet table.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// OTLP (`export --format otlp`, `record`): do not send the events outside spans as log
    /// records.
    #[arg(long)]
    pub no_logs: bool,
    /// OTLP (`export --format otlp`, `record`): an HTTP header sent with every request, as
    /// NAME=VALUE (repeatable), e.g. an authorization token.
    #[arg(long, value_name = "NAME=VALUE")]
    pub header: Vec<String>,
    /// OTLP (`export --format otlp`, `record`): seconds a request may take (0.1 to 600;
    /// 10 when not given).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// OTLP (`export --format otlp`, `record`): how many times a batch is tried again after a
    /// 429, 502, 503, 504 or a connection error, with a backoff (0 to 100;
    /// 5 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub retries: Option<u32>,
}

/// Where an export goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A format of `ringtrace_export` (a file or a directory).
    File,
    /// Parquet tables in a directory.
    Parquet,
    /// An OTLP/HTTP collector.
    Otlp,
}

/// What an export printed, and how it ended.
pub struct Done {
    /// Lines for standard error.
    pub lines: Vec<String>,
    /// Its end.
    pub result: Result<(), Box<dyn Error>>,
}

impl Target {
    /// The target of `--format format`, checking that the options given
    /// fit it.
    pub fn parse(
        format: &str,
        output: Option<&Path>,
        args: &FleetArgs,
    ) -> Result<Target, Box<dyn Error>> {
        let target = match format {
            "parquet" => Target::Parquet,
            "otlp" => Target::Otlp,
            _ => Target::File,
        };
        let otlp_only = [
            ("--endpoint", args.endpoint.is_some()),
            ("--keep", !args.keep.is_empty()),
            ("--service-name", args.service_name.is_some()),
            ("--no-logs", args.no_logs),
            ("--header", !args.header.is_empty()),
            ("--timeout", args.timeout.is_some()),
            ("--retries", args.retries.is_some()),
        ];
        if target != Target::Otlp {
            if let Some((flag, _)) = otlp_only.iter().find(|(_, given)| *given) {
                return Err(format!("{flag} is only for --format otlp").into());
            }
        }
        if target == Target::File && args.host.is_some() {
            return Err("--host is only for --format parquet and --format otlp".into());
        }
        match target {
            Target::Otlp => {
                if output.is_some() {
                    return Err(
                        "--format otlp sends to --endpoint URL and writes no file: leave out -o"
                            .into(),
                    );
                }
                if args.endpoint.is_none() {
                    return Err("--format otlp needs --endpoint URL (e.g. http://127.0.0.1:4318, a collector's OTLP/HTTP port)".into());
                }
            }
            Target::Parquet => match output {
                None => {
                    return Err(
                        "--format parquet writes a directory of tables: give it with -o DIR".into(),
                    )
                }
                Some(o) if o.as_os_str() == "-" => return Err(
                    "-o - (standard output) cannot hold parquet, which is a directory: name one"
                        .into(),
                ),
                Some(_) => {}
            },
            Target::File => {
                if let Err(ringtrace_export::export::ExportError::UnknownFormat { given, valid }) =
                    ringtrace_export::export::Format::parse(format)
                {
                    return Err(format!(
                        "unknown export format `{given}`; valid formats: {valid}, parquet, otlp"
                    )
                    .into());
                }
            }
        }
        if !cfg!(feature = "otlp") && target == Target::Otlp {
            return Err("this ringtrace was built without the `otlp` feature".into());
        }
        if !cfg!(feature = "parquet") && target == Target::Parquet {
            return Err("this ringtrace was built without the `parquet` feature".into());
        }
        // Every option checked before any input is read.
        #[cfg(feature = "otlp")]
        if target == Target::Otlp {
            otlp_options(args)?;
        }
        Ok(target)
    }
}

/// Exports `trace` to `target` (not [`Target::File`]).
pub fn export(target: Target, trace: &Trace<'_>, output: Option<&Path>, args: &FleetArgs) -> Done {
    match target {
        #[cfg(feature = "parquet")]
        Target::Parquet => parquet(trace, output, args),
        #[cfg(feature = "otlp")]
        Target::Otlp => otlp(trace, args),
        _ => {
            let _ = (trace, output, args);
            Done {
                lines: Vec::new(),
                result: Err(format!("--format {target:?} is not built in").into()),
            }
        }
    }
}

#[cfg(feature = "parquet")]
fn parquet(trace: &Trace<'_>, output: Option<&Path>, args: &FleetArgs) -> Done {
    let mut lines = Vec::new();
    let Some(dir) = output else {
        return Done {
            lines,
            result: Err("--format parquet needs -o DIR".into()),
        };
    };
    let mut options = ringtrace_parquet::ParquetOptions::default();
    if let Some(host) = &args.host {
        options = options.host(host.clone());
    }
    let result = ringtrace_parquet::write_parquet(trace, dir, &options).map(|done| {
        let tables: Vec<String> = done
            .tables
            .iter()
            .map(|t| format!("{} {} rows", t.name, t.rows))
            .collect();
        lines.push(format!(
            "ringtrace export: {} events, {} spans, {} lost to {} (parquet: {})",
            done.events,
            done.spans,
            done.lost,
            done.dir.display(),
            tables.join(", ")
        ));
        for w in &done.warnings {
            lines.push(format!("ringtrace export: warning: {w}"));
        }
    });
    Done {
        lines,
        result: result.map_err(Into::into),
    }
}

#[cfg(feature = "otlp")]
fn otlp(trace: &Trace<'_>, args: &FleetArgs) -> Done {
    let mut lines = Vec::new();
    let result = otlp_options(args).and_then(|options| {
        let e = options.endpoint();
        let urls = (e.traces_url().to_owned(), e.logs_url().to_owned());
        let urls = (urls.0.as_str(), urls.1.as_str());
        // What OTLP does not carry: said when it is all the trace holds.
        let events: u64 = trace
            .processes()
            .iter()
            .flat_map(|p| &p.recovery.cpus)
            .map(|c| c.counts.recovered)
            .sum();
        let not_tracing = |s: &ringtrace_otlp::OtlpSummary| {
            let a = &s.assembled;
            (events > 0 && a.spans == 0 && a.events == 0).then(|| {
                format!(
                    "warning: the trace holds {events} events and no `tracing` spans or events: OTLP carries only those (tracepoints and raw writes are not sent; export them with another --format)"
                )
            })
        };
        match ringtrace_otlp::export_otlp(trace, options) {
            Ok(summary) => {
                lines.extend(exported(otlp_report(&summary, urls, args)));
                lines.extend(exported(not_tracing(&summary).into_iter().collect()));
                Ok(())
            }
            Err(ringtrace_otlp::OtlpError::Undelivered { source, summary }) => {
                lines.extend(exported(otlp_report(&summary, urls, args)));
                Err(undelivered(&source, &summary).into())
            }
            Err(e) => Err(e.into()),
        }
    });
    Done { lines, result }
}

#[cfg(feature = "otlp")]
fn undelivered(source: &ringtrace_otlp::SendError, s: &ringtrace_otlp::OtlpSummary) -> String {
    format!(
        "{source}; in all, {} spans and {} log records not delivered",
        s.undelivered_spans(),
        s.undelivered_logs()
    )
}

/// `ringtrace record`'s OTLP stream, when `--endpoint` is given; the other
/// OTLP options need it.
#[cfg(feature = "otlp")]
pub fn record_otlp(
    args: &FleetArgs,
) -> Result<Option<ringtrace_otlp::OtlpOptions>, Box<dyn Error>> {
    if args.endpoint.is_none() {
        let given = [
            ("--keep", !args.keep.is_empty()),
            ("--service-name", args.service_name.is_some()),
            ("--host", args.host.is_some()),
            ("--no-logs", args.no_logs),
            ("--header", !args.header.is_empty()),
            ("--timeout", args.timeout.is_some()),
            ("--retries", args.retries.is_some()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return Err(format!("{flag} is for the OTLP stream: give --endpoint URL too").into());
        }
        return Ok(None);
    }
    otlp_options(args).map(Some)
}

/// `lines` as `ringtrace export` prints them.
#[cfg(feature = "otlp")]
fn exported(lines: Vec<String>) -> impl Iterator<Item = String> {
    lines.into_iter().map(|l| format!("ringtrace export: {l}"))
}

/// The lines `ringtrace record` prints of its OTLP stream (without its
/// prefix), and whether anything was not delivered.
#[cfg(feature = "otlp")]
pub fn otlp_outcome(
    sent: &Result<ringtrace_otlp::OtlpSummary, ringtrace_otlp::OtlpError>,
    args: &FleetArgs,
) -> (Vec<String>, bool) {
    let raw = args.endpoint.as_deref().unwrap_or_default();
    let (traces, logs) = raw
        .parse::<ringtrace_otlp::transport::Endpoint>()
        .map_or_else(
            |_| (raw.to_owned(), raw.to_owned()),
            |e| (e.traces_url().to_owned(), e.logs_url().to_owned()),
        );
    let urls = (traces.as_str(), logs.as_str());
    match sent {
        Ok(summary) => (otlp_report(summary, urls, args), false),
        Err(ringtrace_otlp::OtlpError::Undelivered { source, summary }) => {
            let mut lines = otlp_report(summary, urls, args);
            lines.push(format!("error: {}", undelivered(source, summary)));
            (lines, true)
        }
        Err(e) => (vec![format!("error: {e}")], true),
    }
}

#[cfg(feature = "otlp")]
fn otlp_options(args: &FleetArgs) -> Result<ringtrace_otlp::OtlpOptions, Box<dyn Error>> {
    use ringtrace_otlp::{KeepRules, OtlpOptions, TransportOptions};
    let endpoint = args.endpoint.as_deref().unwrap_or_default().parse()?;
    let mut transport = TransportOptions::default();
    if let Some(t) = args.timeout {
        if !(0.1..=600.0).contains(&t) {
            return Err(format!("--timeout {t:?}: give seconds from 0.1 to 600").into());
        }
        transport = transport.timeout(std::time::Duration::from_secs_f64(t));
    }
    if let Some(r) = args.retries {
        transport = transport.max_retries(r);
    }
    for h in &args.header {
        let Some((name, value)) = h.split_once('=').filter(|(n, _)| !n.trim().is_empty()) else {
            return Err(format!("--header `{h}`: expected NAME=VALUE").into());
        };
        ringtrace_otlp::transport::check_header(name.trim(), value)
            .map_err(|e| format!("--header: {e}"))?;
        transport = transport.header(name.trim(), value);
    }
    let mut options = OtlpOptions::new(endpoint)
        .keep(KeepRules::parse(&args.keep)?)
        .logs(!args.no_logs)
        .transport(transport);
    if let Some(s) = &args.service_name {
        if s.is_empty() {
            return Err("--service-name is empty: give the service's name".into());
        }
        options = options.service_name(s.clone());
    }
    if let Some(h) = &args.host {
        if h.is_empty() {
            return Err("--host is empty: give the host's name".into());
        }
        options = options.host(h.clone());
    }
    Ok(options)
}

/// The lines an OTLP export prints, without the command's prefix: what
/// was kept and dropped (by rule), what was sent and delivered.
#[cfg(feature = "otlp")]
fn otlp_report(
    s: &ringtrace_otlp::OtlpSummary,
    (traces, logs): (&str, &str),
    args: &FleetArgs,
) -> Vec<String> {
    let mut lines = Vec::new();
    let a = &s.assembled;
    lines.push(format!(
        "{} span trees ({} spans, {} unclosed), {} events ({} outside spans) read",
        a.trees, a.spans, a.unclosed, a.events, a.loose_events
    ));
    let k = &s.kept;
    let mut kept = format!(
        "tail sampling kept {} trees ({} spans), dropped {} trees ({} spans)",
        k.kept_trees, k.kept_spans, k.dropped_trees, k.dropped_spans
    );
    if !args.keep.is_empty() {
        let by: Vec<String> = args
            .keep
            .iter()
            .zip(&k.by_rule)
            .map(|(rule, n)| format!("{rule}: {n}"))
            .collect();
        kept.push_str(&format!(" [{}]", by.join(", ")));
    }
    lines.push(kept);
    let sent = &s.sent;
    lines.push(format!(
        "{} spans delivered to {traces} and {} log records to {logs}, in {} requests ({} retries, {} bytes)",
        sent.spans.delivered,
        sent.log_records.delivered,
        sent.requests,
        sent.retries,
        sent.bytes_sent
    ));
    if sent.spans.rejected + sent.log_records.rejected > 0 {
        lines.push(format!(
            "warning: the collector rejected {} spans and {} log records it received",
            sent.spans.rejected, sent.log_records.rejected
        ));
    }
    if a.orphan_records + a.orphan_spans > 0 {
        lines.push(format!(
            "warning: {} spans whose parent is not in the trace were sent as roots; {} records of spans whose creation is not in the trace were left out",
            a.orphan_spans, a.orphan_records
        ));
    }
    lines
}
