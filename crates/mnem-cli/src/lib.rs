//! `mnem`: thin glue from the command line to the store. Parsing lives in `args`, output
//! in `render`; the work itself is the store's and the core's. A library so that the
//! binary (`main.rs`) and the Python extension (`mnem-py`, whose `mnem` command runs it
//! in-process) are one program with one copy of the model.

mod args;
mod import;
mod notes;
mod render;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::error::ErrorKind;
use clap::Parser;
use mnem_core::feedback::{FeedbackInput, FeedbackResult, Judgment};
use mnem_core::graph::{Correction, RememberRequest};
use mnem_core::pack::PackSelection;
use mnem_core::{
    Access, Actor, Evidence, LifecycleState, NewEvidence, Principal, RecallQuery, Scope, Space,
};
use mnem_embed::{Embedder, OpenAiConfig, ProviderChoice};
use mnem_postgres::PgStore;
use mnem_service::{
    spawn_deriver, spawn_worker, AuthError, Authenticator, ChatConfig, ChatHypothesisModel,
    ChatVerifier, HypothesisDecision, Memory, ServiceError, SessionKey, MAX_HELD_LISTED,
    OWN_WRITE_EMBED_BUDGET,
};
use mnem_sqlite::SqliteStore;
use mnem_store::{
    CredentialStore, GraphStore, GraphView, ImportMode, SearchIndex, StoreError, SystemClock,
};

use args::{
    Cli, Command, FeedbackCommand, FeedbackSubmitArgs, HypothesesCommand, ImportFormat, PackMode,
    RecallArgs, RememberArgs,
};

/// Teams with at least this many vectors are searched through their vector index (HNSW,
/// saved beside a SQLite file); smaller ones are scanned exactly. `mnem bench` at 10k
/// items in 8 teams (largest 3,752): hybrid recall p50 7.9 ms through the indexes, 14.1
/// ms scanning. Below a few thousand vectors the scan costs a few milliseconds, and the
/// exact answer with no index to build is worth that.
pub(crate) const ANN_THRESHOLD: usize = 5_000;
/// How often a long-lived process's embedding worker retries without being woken.
const WORKER_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);
/// How often a long-lived process dreams for the teams whose graph changed.
const DERIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

/// A failure, split by whose it is: bad input exits 2 (like a usage error), anything else 1.
#[derive(Debug)]
enum Failure {
    Input(String),
    Runtime(String),
}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Invalid(invalid) => Failure::Input(invalid.to_string()),
            err @ (StoreError::Conflict(_)
            | StoreError::Pack(_)
            | StoreError::NotPermitted { .. }
            | StoreError::TeamNotFound { .. }
            | StoreError::KeyNotFound { .. }) => Failure::Input(err.to_string()),
            other => Failure::Runtime(other.to_string()),
        }
    }
}

impl From<mnem_api::OpError> for Failure {
    fn from(err: mnem_api::OpError) -> Self {
        match err {
            mnem_api::OpError::Service(service) => service.into(),
            other => Failure::Input(other.to_string()),
        }
    }
}

impl From<ServiceError> for Failure {
    fn from(err: ServiceError) -> Self {
        match err {
            ServiceError::Store(store) => store.into(),
            other => Failure::Runtime(other.to_string()),
        }
    }
}

/// Exit statuses: 0 done, 1 a runtime failure, 2 bad input (nothing was written).
const SUCCESS: u8 = 0;
const FAILURE: u8 = 1;
const BAD_INPUT: u8 = 2;

/// Runs the command line `args` (the program name first, as `std::env::args_os` gives
/// it) and returns the exit status.
pub fn main_with<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return clap_failure(err),
    };
    // A one-shot command prints each held write's warning itself; a server's operator
    // (and an MCP client's) only has the log.
    let long_running = matches!(
        cli.command,
        Command::Serve(_) | Command::Ui(_) | Command::Mcp(_)
    );
    init_logging(long_running);
    // One command, one request: a single worker thread. The server answers many clients
    // at once and takes every core.
    let workers = match cli.command {
        Command::Serve(_) | Command::Ui(_) => {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            limit_malloc_arenas(cores.max(2));
            cores
        }
        _ => {
            quiet_on_closed_pipe();
            1
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => return report(Failure::Runtime(format!("cannot start runtime: {err}"))),
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => SUCCESS,
        Err(failure) => report(failure),
    }
}

/// glibc gives each thread that allocates its own malloc arena and keeps freed memory in
/// it; a server whose request, embedding (rayon) and blocking threads each touch large
/// buffers keeps one high-water mark per thread (glibc allows 8 per core). One arena per
/// core bounds that (`scripts/bench/rss_writes.py`, 2 cores, 20 maximal writes: 253 MiB
/// against 303 MiB). Called before any thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_malloc_arenas(arenas: usize) {
    let arenas = libc::c_int::try_from(arenas).unwrap_or(libc::c_int::MAX);
    // SAFETY: mallopt only sets an allocator parameter; no other thread exists yet.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas(_arenas: usize) {}

/// A one-shot command whose reader went away (`mnem recall … | head -c1`) ends as Unix
/// tools do — quietly, by SIGPIPE (exit 141) — rather than panicking in `println!`. Rust
/// ignores SIGPIPE by default; servers keep that (a closed socket is an error to handle).
#[cfg(unix)]
fn quiet_on_closed_pipe() {
    // SAFETY: restores the default disposition of one signal before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn quiet_on_closed_pipe() {}

/// Help and version print as clap renders them; every other parse error is reduced to
/// one line naming the offending flag and value.
fn clap_failure(err: clap::Error) -> u8 {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = err.print();
            BAD_INPUT
        }
        _ => {
            // clap's message runs up to the first blank line (then usage and hints);
            // joined, it is one line naming the flag and the value.
            let rendered = err.render().to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|line| !line.trim().is_empty())
                .map(str::trim)
                .collect();
            eprintln!("{}", message.join(" "));
            BAD_INPUT
        }
    }
}

fn report(failure: Failure) -> u8 {
    match failure {
        Failure::Input(message) => {
            eprintln!("error: {message}");
            BAD_INPUT
        }
        Failure::Runtime(message) => {
            eprintln!("error: {message}");
            FAILURE
        }
    }
}

/// Logs go to stderr: stdout is for results (and, later, the MCP stdio transport). By
/// default warnings only, and for a one-shot command not the held-write log, which the
/// command reports in its own words.
fn init_logging(long_running: bool) {
    let default = if long_running {
        "warn".to_string()
    } else {
        format!("warn,{}=off", mnem_service::HELD_LOG_TARGET)
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MNEM_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only for a terminal: escape codes in a log file or a pipe are noise.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

async fn run(cli: Cli) -> Result<(), Failure> {
    // Input that needs no store is checked before the store is opened, so bad input
    // never creates or touches a file.
    let remember_input = match &cli.command {
        Command::Remember(args) => Some(remember_input(args)?),
        _ => None,
    };
    let correction = match &cli.command {
        Command::Correct(args) => Some(read_json::<Correction>(&args.file, "correction")?),
        _ => None,
    };
    if let Command::Bench(args) = &cli.command {
        // Measures on its own temporary stores; never touches the user's.
        return bench(args, embedder(&cli)?, cli.database.clone(), cli.json).await;
    }
    if let Command::Eval(args) = &cli.command {
        return eval(args, embedder(&cli)?, cli.database.clone(), cli.json).await;
    }
    let input = Input {
        remember: remember_input,
        correction,
    };
    match &cli.database {
        Some(url) => {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return Err(Failure::Input(format!(
                    "database: `{url}` is not a postgres:// URL (for a file, use --db PATH)"
                )));
            }
            let store = PgStore::connect(url, Arc::new(SystemClock), cli.pg_pool)
                .await?
                .with_ann_threshold(cli.ann_threshold);
            tracing::debug!(team = %cli.team, "postgres store opened");
            run_on(cli, store, input).await
        }
        None => {
            let path = store_path(cli.db.clone())?;
            let store = SqliteStore::open(&path, Arc::new(SystemClock))?
                .with_ann_threshold(cli.ann_threshold);
            tracing::debug!(path = %path.display(), team = %cli.team, "store opened");
            run_on(cli, store, input).await
        }
    }
}

/// What was read and checked before any store was opened.
struct Input {
    remember: Option<RememberInput>,
    correction: Option<Correction>,
}

/// What the CLI needs of a backend beyond the storage traits: how a server prepares it.
trait Backend: GraphStore + SearchIndex + CredentialStore + Clone + 'static {
    /// Opens (or builds) what the first recall would otherwise wait for; how many vector
    /// indexes (SQLite's saved ones; PostgreSQL's HNSW indexes are always there).
    fn warm(&self) -> impl std::future::Future<Output = Result<usize, StoreError>> + Send;
}

impl Backend for SqliteStore {
    async fn warm(&self) -> Result<usize, StoreError> {
        self.warm_ann().await
    }
}

impl Backend for PgStore {
    async fn warm(&self) -> Result<usize, StoreError> {
        Ok(0)
    }
}

async fn run_on<S: Backend>(cli: Cli, store: S, input: Input) -> Result<(), Failure> {
    let Input {
        remember: remember_input,
        correction,
    } = input;
    // Server administration and the server itself act for no one principal.
    match &cli.command {
        Command::Serve(args) => return serve(&cli, args, store, None).await,
        Command::Ui(args) => return ui(&cli, args, store).await,
        Command::Team(command) => return team(command, store, cli.json).await,
        Command::Key(command) => return key(&cli, command, store).await,
        _ => {}
    }
    let actor = store.open_profile(&cli.team, &cli.as_profile).await?;
    match cli.command {
        Command::Remember(ref args) => {
            let ops = operations(with_verifier(
                Memory::open(store, embedder(&cli)?).await?,
                &args.verifier,
            ));
            let memory = ops.memory();
            match remember_input {
                Some(RememberInput::Request(request)) => {
                    let outcome = ops
                        .remember_request(&Principal::local(actor), request)
                        .await?;
                    render::remembered_request(&outcome, cli.json);
                }
                Some(RememberInput::Text(text)) => {
                    let stored = memory.remember(&actor, new_evidence(text, args)).await?;
                    let reason = held_reason(memory.store(), &actor, &stored.evidence).await?;
                    render::remembered(&stored, reason.as_deref(), cli.json);
                }
                None => {}
            }
            embed_after_write(memory, &actor).await?;
        }
        Command::Recall(ref args) => {
            let needs_vectors = !args.query.trim().is_empty();
            let provider = if needs_vectors { embedder(&cli)? } else { None };
            let memory = Memory::open(store, provider).await?;
            let recall = operations(memory)
                .recall_query(&Principal::local(actor), recall_query(args))
                .await?;
            render::recalled(&recall, cli.json, args.explain);
        }
        Command::Retract(args) => {
            let memory = Memory::unchecked(store, None);
            let retraction = operations(memory)
                .retract_evidence(&admin_if(actor, args.admin), args.ids.clone(), args.reason)
                .await?;
            render::retracted(&args.ids, &retraction.kept, cli.json);
        }
        Command::Quarantine(args) => {
            let memory = Memory::unchecked(store, None);
            memory
                .quarantine_evidence_as(
                    &actor,
                    admin_if(actor, args.admin).rights(),
                    args.ids.clone(),
                    args.reason,
                )
                .await?;
            render::lifecycle("quarantined", &args.ids, cli.json);
        }
        Command::Release(args) => {
            let memory = Memory::unchecked(store, None);
            operations(memory)
                .release_evidence(&Principal::local(actor), args.ids.clone(), args.reason)
                .await?;
            render::lifecycle("released", &args.ids, cli.json);
        }
        Command::List(args) => {
            let memory = Memory::unchecked(store, None);
            let held = operations(memory)
                .held_evidence(&Principal::local(actor), args.limit)
                .await?;
            render::held(&held, cli.json);
        }
        Command::Forget(args) => {
            let memory = Memory::unchecked(store, None);
            operations(memory)
                .forget_evidence(&Principal::local(actor), args.ids.clone())
                .await?;
            render::lifecycle("erased", &args.ids, cli.json);
        }
        Command::Trace(args) => {
            let memory = Memory::unchecked(store, None);
            let view = GraphView {
                valid_at: args.time.valid_at,
                known_at: args.time.known_at,
            };
            let trace = operations(memory)
                .trace_relationship(&Principal::local(actor), args.id, view)
                .await?;
            render::traced(&trace, cli.json);
        }
        Command::Correct(ref args) => {
            let memory = with_verifier(Memory::open(store, embedder(&cli)?).await?, &args.verifier);
            let Some(correction) = correction else {
                return Ok(());
            };
            let outcome = operations(memory)
                .correct_relationship(&Principal::local(actor), args.id, correction)
                .await?;
            render::corrected(&outcome, cli.json);
        }
        Command::Show(args) => {
            let memory = Memory::unchecked(store, None);
            let shown = operations(memory)
                .show_evidence(&Principal::local(actor), args.id)
                .await?;
            render::shown(&shown, cli.json);
        }
        Command::Feedback(FeedbackCommand::Submit(ref args)) => {
            let memory = Memory::unchecked(store, None);
            let stored = operations(memory)
                .submit_feedback(&Principal::local(actor), feedback_input(args)?)
                .await?;
            render::feedback_recorded(&stored, cli.json);
        }
        Command::Feedback(FeedbackCommand::Replay(ref args)) => {
            let feedback = store.feedback(&actor, args.limit).await?;
            let provider = embedder(&cli)?;
            let baseline = Memory::open(store.clone(), provider.clone())
                .await?
                .with_profile(args.baseline.clone());
            let candidate = Memory::open(store, provider)
                .await?
                .with_profile(args.profile.clone());
            let before = baseline.replay_feedback(&actor, &feedback).await?;
            let after = candidate.replay_feedback(&actor, &feedback).await?;
            render::replayed(
                feedback.len(),
                (&baseline.profile().version, &before),
                (&candidate.profile().version, &after),
                cli.json,
            );
        }
        Command::Dream(ref args) => {
            let memory =
                with_hypothesis_model(Memory::unchecked(store, None), &args.hypothesis_model);
            let started = std::time::Instant::now();
            let report = memory.dream(&actor, args.limit).await?;
            render::dreamed(&report, started.elapsed(), cli.json);
        }
        Command::Communities(ref args) => {
            let memory = Memory::unchecked(store, None);
            let report = if args.compute {
                let started = std::time::Instant::now();
                Some((memory.compute_communities(&actor).await?, started.elapsed()))
            } else {
                None
            };
            let listed = memory.communities(&actor, args.limit).await?;
            render::communities(report, &listed, cli.json);
        }
        Command::Hypotheses(ref command) => {
            // Only a confirmation writes (its proof is verified and embedded): the others
            // read, and never load the embedding model.
            let memory = match command {
                HypothesesCommand::Confirm { verifier, .. } => {
                    with_verifier(Memory::open(store, embedder(&cli)?).await?, verifier)
                }
                _ => Memory::unchecked(store, None),
            };
            let ops = operations(memory);
            let memory = ops.memory();
            let caller = Principal::local(actor);
            match command {
                HypothesesCommand::List { status, limit } => {
                    let listed = ops
                        .hypotheses_listed(&caller, status.clone(), *limit)
                        .await?;
                    render::hypotheses(&listed, cli.json);
                }
                HypothesesCommand::Show { id } => {
                    render::hypothesis(&ops.hypothesis(&caller, *id).await?, cli.json);
                }
                HypothesesCommand::Confirm {
                    id, reason, file, ..
                } => {
                    let proof = read_json::<RememberRequest>(file, "proof")?;
                    let decision = HypothesisDecision::Confirm {
                        reason: reason.clone(),
                        proof,
                    };
                    let resolved = ops.decide_hypothesis(&caller, *id, decision).await?;
                    render::hypothesis(&resolved.hypothesis, cli.json);
                    embed_after_write(memory, &caller.actor).await?;
                }
                HypothesesCommand::Reject { id, reason } => {
                    let decision = HypothesisDecision::Reject {
                        reason: reason.clone(),
                    };
                    let resolved = ops.decide_hypothesis(&caller, *id, decision).await?;
                    render::hypothesis(&resolved.hypothesis, cli.json);
                }
            }
        }
        Command::Export(ref args) => {
            let memory = Memory::unchecked(store, None);
            let selection = PackSelection {
                scope: args.scope.clone(),
                since: args.since,
                until: args.until,
            }
            .checked()
            .map_err(|e| Failure::Input(e.to_string()))?;
            let pack = memory.export_pack(&actor, selection, None).await?;
            let text = pack.encode();
            let to_stdout = args.output.as_os_str() == "-";
            if to_stdout {
                std::io::stdout()
                    .write_all(text.as_bytes())
                    .map_err(|e| Failure::Runtime(format!("cannot write the pack: {e}")))?;
            } else {
                std::fs::write(&args.output, &text).map_err(|e| {
                    Failure::Input(format!(
                        "output: cannot write {}: {e}",
                        args.output.display()
                    ))
                })?;
            }
            render::exported(&pack.counts(), text.len(), to_stdout, cli.json);
        }
        Command::Import(ref args) if args.format != ImportFormat::Pack => {
            let memory = Memory::open(store, embedder(&cli)?).await?;
            let started = std::time::Instant::now();
            let report = import::import(&memory, &actor, args).await?;
            render::imported_items(&report, started.elapsed(), cli.json);
            embed_after_write(&memory, &actor).await?;
        }
        Command::Import(ref args) => {
            if args.scope.is_some() || !args.labels.is_empty() {
                return Err(Failure::Input(
                    "a memory pack carries its own scopes and labels: --scope and --label \
                     are for the other formats"
                        .into(),
                ));
            }
            let text = read_file(&args.path, "pack")?;
            let mode = match args.mode {
                PackMode::Review => ImportMode::Review,
                PackMode::Trusted => ImportMode::Trusted,
            };
            let memory = Memory::open(store, embedder(&cli)?).await?;
            let report = memory.import_pack(&actor, &text, mode).await?;
            render::imported(&report, cli.json);
            embed_after_write(&memory, &actor).await?;
        }
        Command::Mcp(ref args) => {
            // A long-lived process: a background worker embeds what the tools write.
            let memory = Arc::new(with_hypothesis_model(
                with_verifier(Memory::open(store, embedder(&cli)?).await?, &args.verifier),
                &args.hypothesis_model,
            ));
            let wake = Arc::new(tokio::sync::Notify::new());
            let worker = spawn_worker(Arc::clone(&memory), Arc::clone(&wake), WORKER_INTERVAL);
            let dreamer = spawn_deriver(Arc::clone(&memory), DERIVE_INTERVAL);
            let ops = mnem_api::Operations::new(memory).notifying(wake);
            let tools = mnem_mcp::MemoryTools::new(ops, mnem_core::Principal::local(actor));
            let served = mnem_mcp::serve_stdio(tools).await;
            worker.abort();
            dreamer.abort();
            served.map_err(Failure::Runtime)?;
        }
        Command::Status => {
            let memory = Memory::unchecked(store, embedder(&cli)?);
            let held = memory.quarantined(&actor, MAX_HELD_LISTED).await?.len();
            let at_least = held == MAX_HELD_LISTED;
            let store = store_location(&cli)?;
            render::status(&store, &memory.status().await?, held, at_least, cli.json);
        }
        // These ran above: on their own temporary stores, or for no one principal.
        Command::Bench(_)
        | Command::Eval(_)
        | Command::Serve(_)
        | Command::Ui(_)
        | Command::Team(_)
        | Command::Key(_) => {}
        Command::Reindex => {
            let memory = Memory::unchecked(store, embedder(&cli)?);
            let report = memory.reindex().await?;
            render::reindexed(&report, cli.json);
        }
    }
    Ok(())
}

async fn bench(
    args: &args::BenchCommand,
    model: Option<Arc<dyn Embedder>>,
    database: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    if args.graph {
        let options = mnem_eval::graph_bench::GraphBenchOptions {
            evidence: args.graph_evidence,
            relationships: args.graph_relationships,
            entities: args.graph_entities,
            queries: args.queries as usize,
            seed: args.seed,
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            database,
        };
        let report = mnem_eval::graph_bench::run(&options)
            .await
            .map_err(|e| match e {
                mnem_eval::EvalError::Bench(reason) => Failure::Input(reason),
                other => Failure::Runtime(other.to_string()),
            })?;
        return print_report(json, &report, || report.table());
    }
    if args.sizes.contains(&0) {
        return Err(Failure::Input(
            "sizes: every size must be at least 1".into(),
        ));
    }
    let options = mnem_eval::bench::BenchOptions {
        sizes: args.sizes.clone(),
        teams: args.teams as usize,
        queries: args.queries as usize,
        seed: args.seed,
        model,
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database,
    };
    let report = mnem_eval::bench::run(&options)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    print_report(json, &report, || report.table())
}

/// The JSON document with `--json`, else the table.
fn print_report<T: serde::Serialize>(
    json: bool,
    report: &T,
    table: impl FnOnce() -> String,
) -> Result<(), Failure> {
    if json {
        let text =
            serde_json::to_string_pretty(report).map_err(|e| Failure::Runtime(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", table());
    }
    Ok(())
}

/// `mnem eval`: reads the benchmark, runs it on a temporary store, prints the table (or
/// the JSON summary with `--json`).
async fn eval(
    args: &args::EvalCommand,
    embedder: Option<Arc<dyn Embedder>>,
    database: Option<String>,
    json: bool,
) -> Result<(), Failure> {
    let profiles = if !args.profile.is_empty() {
        args.profile.clone()
    } else if embedder.is_some() {
        vec![
            mnem_core::LEXICAL_PROFILE,
            mnem_core::VECTOR_PROFILE,
            mnem_core::DEFAULT_PROFILE,
        ]
    } else {
        vec![mnem_core::LEXICAL_PROFILE]
    };
    if embedder.is_none() {
        if let Some(profile) = profiles.iter().find(|p| p.vector_branch) {
            return Err(Failure::Input(format!(
                "profile: {} uses the vector branch; it needs an embedder (not --embedder none)",
                profile.version
            )));
        }
    }
    // The recall options are checked before a quarter-hour ingest, not after it.
    for (&context_bytes, &window) in args
        .context_bytes
        .iter()
        .flat_map(|b| args.window.iter().map(move |w| (b, w)))
    {
        let probe = mnem_core::RecallQuery {
            limit: args.limit,
            context_bytes,
            window,
            ..mnem_core::RecallQuery::text("probe")
        };
        probe
            .validated()
            .map_err(|e| Failure::Input(e.to_string()))?;
    }
    let max_questions = args.questions.map(|n| n as usize);
    let dataset =
        mnem_eval::read(&args.dataset, &args.file, max_questions).map_err(|e| match e {
            // An unreadable or malformed benchmark file is the caller's input.
            mnem_eval::EvalError::Read { .. } | mnem_eval::EvalError::Format { .. } => {
                Failure::Input(e.to_string())
            }
            other => Failure::Runtime(other.to_string()),
        })?;
    if args.screening_only {
        let report = mnem_eval::screening::screen_dataset(&dataset);
        return print_report(json, &report, || report.table());
    }
    let options = mnem_eval::EvalOptions {
        profiles,
        embedder,
        embed_cache: args.embed_cache.clone(),
        limit: args.limit,
        context_bytes: args.context_bytes.clone(),
        windows: args.window.clone(),
        out: args.out.clone(),
        progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        database,
        fit: args.fit.clone(),
        fit_reranker: args.fit_reranker.as_ref().map(|features| {
            features
                .iter()
                .filter(|feature| !feature.is_empty())
                .cloned()
                .collect()
        }),
        contextual_vectors: args.contextual_vectors,
    };
    let report = mnem_eval::run(&dataset, &options)
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    print_report(json, &report, || report.table())
}

/// The rights a lifecycle command asks for: `--admin` acts on any profile's evidence.
/// The local principal, with admin access when `admin` (`--admin`: may change evidence
/// another profile wrote), else write access.
fn admin_if(actor: Actor, admin: bool) -> Principal {
    let access = if admin { Access::Admin } else { Access::Write };
    Principal {
        access,
        ..Principal::local(actor)
    }
}

/// `mnem feedback submit`'s flags as the feedback a client would send: ranks from the
/// order of `--returned`; every judged id must be one of them.
fn feedback_input(args: &FeedbackSubmitArgs) -> Result<FeedbackInput, Failure> {
    let judged = [
        ("useful", Judgment::Useful, &args.useful),
        ("not-useful", Judgment::NotUseful, &args.not_useful),
        ("wrong", Judgment::Wrong, &args.wrong),
    ];
    for (flag, _, ids) in &judged {
        if let Some(id) = ids.iter().find(|id| !args.returned.contains(id)) {
            return Err(Failure::Input(format!(
                "--{flag}: {id} is not among --returned"
            )));
        }
    }
    let results = args
        .returned
        .iter()
        .enumerate()
        .map(|(i, &evidence_id)| FeedbackResult {
            evidence_id,
            rank: u32::try_from(i + 1).unwrap_or(u32::MAX),
            judgment: judged
                .iter()
                .find(|(_, _, ids)| ids.contains(&evidence_id))
                .map(|(_, judgment, _)| *judgment),
        })
        .collect();
    Ok(FeedbackInput {
        query: args.query.clone(),
        results,
    })
}

/// Why a just-written item was held, from its lifecycle log (`None` when it is current).
async fn held_reason<S: GraphStore>(
    store: &S,
    actor: &Actor,
    evidence: &Evidence,
) -> Result<Option<String>, Failure> {
    if evidence.state != LifecycleState::Quarantined {
        return Ok(None);
    }
    let history = store.history(actor, evidence.id).await?;
    Ok(history.into_iter().rev().find_map(|e| e.reason))
}

/// The configured embedding provider; `None` for `--embedder none`.
fn embedder(cli: &Cli) -> Result<Option<Arc<dyn Embedder>>, Failure> {
    let choice = match cli.embedder.as_str() {
        "none" => ProviderChoice::None,
        "openai" => ProviderChoice::OpenAi(OpenAiConfig {
            base_url: cli.embed_url.clone(),
            model: cli.embed_model.clone(),
            dims: cli.embed_dims,
            api_key: std::env::var("MNEM_EMBED_API_KEY").ok(),
        }),
        _ => ProviderChoice::Builtin,
    };
    mnem_embed::build(&choice).map_err(|err| Failure::Runtime(err.to_string()))
}

fn read_text(text: &str) -> Result<String, Failure> {
    if text != "-" {
        return Ok(text.to_string());
    }
    let mut buffer = String::new();
    std::io::stdin()
        .read_to_string(&mut buffer)
        .map_err(|err| Failure::Input(format!("text: cannot read standard input: {err}")))?;
    Ok(buffer)
}

/// Which store a command uses, as `status` names it: the file, or the PostgreSQL server
/// and database without credentials.
fn store_location(cli: &Cli) -> Result<String, Failure> {
    match &cli.database {
        Some(url) => {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
            let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            Ok(format!("postgres://{host}"))
        }
        None => Ok(store_path(cli.db.clone())?.display().to_string()),
    }
}

fn store_path(db: Option<PathBuf>) -> Result<PathBuf, Failure> {
    embedded_store_path(db).map_err(Failure::Runtime)
}

/// Where an embedded store lives: `db` with its folder made if need be, or, without one,
/// the per-user default store (`mnem.db` in the platform data directory). The CLI and
/// the Python bindings open the same file for the same arguments.
pub fn embedded_store_path(db: Option<PathBuf>) -> Result<PathBuf, String> {
    if let Some(path) = db {
        // A new store in a new folder (`--db ~/memory/agent.db`) is made with its folder,
        // as the default path's is, rather than failing to open the file.
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        return Ok(path);
    }
    let dir = dirs::data_dir()
        .ok_or("no platform data directory; pass --db PATH")?
        .join("mnem");
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    Ok(dir.join("mnem.db"))
}

fn new_evidence(text: String, args: &RememberArgs) -> NewEvidence {
    let mut new = NewEvidence::new(text);
    new.kind = args.kind.clone();
    new.source = args.source.clone();
    new.source_type = args.source_type;
    new.authority = args.authority;
    new.source_group = args.source_group.clone();
    new.source_key = args.source_key.clone();
    new.scope = args.scope.clone().unwrap_or_else(Scope::root);
    new.observed_at = args.observed_at;
    new.expires_at = args.expires_at;
    new.refs = args.refs.clone();
    new.labels = args.labels.clone();
    new.space = if args.private {
        Space::Private
    } else {
        Space::Team
    };
    new
}

/// The operations layer over `memory`, for this process's commands: evidence a request
/// writes without a `source` is sourced `cli`.
fn operations<S: GraphStore + SearchIndex + 'static>(memory: Memory<S>) -> mnem_api::Operations<S> {
    mnem_api::Operations::new(Arc::new(memory)).via("cli")
}

fn recall_query(args: &RecallArgs) -> RecallQuery {
    RecallQuery {
        query: args.query.clone(),
        kinds: args.kinds.clone(),
        since: args.since,
        until: args.until,
        min_score: args.min_score,
        order: args.order,
        limit: args.limit,
        scope: args.scope.clone(),
        include_ancestors: args.include_ancestors,
        include_descendants: args.include_descendants,
        refs: args.refs.clone(),
        context_bytes: args.context_bytes,
        request_time: args.request_time,
        valid_at: args.time.valid_at,
        known_at: args.time.known_at,
        known_evidence_ids: args.known_evidence.clone(),
        known_relationship_ids: args.known_relationships.clone(),
        expand_from_entity_ids: args.expand_from.clone(),
        path_limit: args.path_limit,
        window: args.window,
        include_hypotheses: args.hypotheses,
        include_communities: args.communities,
    }
}

/// Adds the model verifier when `--verifier-url` is set (the key comes from
/// `MNEM_VERIFIER_KEY`, never a flag, so it stays out of shell history).
fn with_verifier<S: GraphStore + SearchIndex>(
    memory: Memory<S>,
    args: &args::VerifierArgs,
) -> Memory<S> {
    match &args.verifier_url {
        Some(url) => {
            let verifier = ChatVerifier::new(ChatConfig {
                base_url: url.clone(),
                model: args.verifier_model.clone(),
                api_key: std::env::var("MNEM_VERIFIER_KEY").ok(),
            });
            memory.with_verifier(Arc::new(verifier), args.verifier_threshold)
        }
        None => memory,
    }
}

/// Adds the hypothesis model when `--hypothesis-model-url` is set (the key comes from
/// `MNEM_HYPOTHESIS_MODEL_KEY`).
fn with_hypothesis_model<S: GraphStore + SearchIndex>(
    memory: Memory<S>,
    args: &args::HypothesisModelArgs,
) -> Memory<S> {
    match &args.hypothesis_model_url {
        Some(url) => memory.with_hypothesis_model(Arc::new(ChatHypothesisModel::new(ChatConfig {
            base_url: url.clone(),
            model: args.hypothesis_model.clone(),
            api_key: std::env::var("MNEM_HYPOTHESIS_MODEL_KEY").ok(),
        }))),
        None => memory,
    }
}

/// What `remember` writes: one text, or a structured request.
enum RememberInput {
    Text(String),
    Request(RememberRequest),
}

/// Reads and validates what `remember` will write before any store is opened.
fn remember_input(args: &RememberArgs) -> Result<RememberInput, Failure> {
    if let Some(file) = &args.file {
        let request: RememberRequest = read_json(file, "request")?;
        request
            .clone()
            .validated()
            .map_err(|e| Failure::Input(e.to_string()))?;
        return Ok(RememberInput::Request(request));
    }
    Ok(RememberInput::Text(read_text(
        args.text.as_deref().unwrap_or_default(),
    )?))
}

/// Parses a JSON file (`-` = standard input); a malformed document is bad input naming
/// `what` and the position.
fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, Failure> {
    let text = read_file(path, what)?;
    serde_json::from_str(&text).map_err(|e| Failure::Input(format!("{what}: {e}")))
}

/// After a committed write, computes its vectors before this process exits — the team's
/// own first, for a bounded time, never another team's backlog.
async fn embed_after_write<S: Backend>(memory: &Memory<S>, actor: &Actor) -> Result<(), Failure> {
    let report = memory
        .embed_own_writes(actor, OWN_WRITE_EMBED_BUDGET)
        .await?;
    tracing::debug!(?report, "embedded this team's pending documents");
    if report.left_pending {
        // Said on stderr whatever the log level: an import that leaves a backlog must not
        // look finished to meaning-based recall.
        let pending = memory
            .store()
            .freshness(memory.store().clock().now())
            .await
            .map(|f| f.pending_document_count.to_string())
            .unwrap_or_else(|_| "some".into());
        eprintln!(
            "{pending} documents are still pending vectors (full-text search has them; recall \
             by meaning does not yet): `mnem serve` or `mnem mcp` embeds the rest, `mnem \
             status` counts them"
        );
    }
    Ok(())
}

/// A file's text, or standard input's for `-`.
fn read_file(path: &Path, what: &str) -> Result<String, Failure> {
    if path.as_os_str() == "-" {
        return read_text("-");
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("{what}: cannot read {}: {e}", path.display())))
}

/// `mnem ui`: the server, with a read-only key for `--team` as `--as` that exists only in
/// this process's memory (never stored: it cannot outlive the process, however it ends,
/// and no other server accepts it), and the console's address printed with the key in its
/// fragment, which the browser never sends.
async fn ui<S: Backend>(cli: &Cli, args: &args::ServeArgs, store: S) -> Result<(), Failure> {
    // Created on first use, as every memory command does.
    let actor = store.open_profile(&cli.team, &cli.as_profile).await?;
    let console = SessionKey::issue(actor, Access::Read).map_err(auth_failure)?;
    serve(cli, args, store, Some(console)).await
}

/// `mnem serve`: the HTTP server until Ctrl-C / SIGTERM, with the embedding worker; with
/// `console_key`, the console's address carrying it is printed once listening.
async fn serve<S: Backend>(
    cli: &Cli,
    args: &args::ServeArgs,
    store: S,
    console_key: Option<SessionKey>,
) -> Result<(), Failure> {
    // Before listening: a team's first recall would otherwise wait for its vector index
    // to load, or to be built when none is saved yet.
    let warmed = store.warm().await?;
    tracing::info!(indexes = warmed, "vector indexes ready");
    let mut authenticator = Authenticator::new(Arc::new(store.clone()));
    if let Some(key) = &console_key {
        authenticator = authenticator.with_session_key(key.clone());
    }
    let auth = Arc::new(authenticator);
    let memory = Arc::new(with_hypothesis_model(
        with_verifier(Memory::open(store, embedder(cli)?).await?, &args.verifier),
        &args.hypothesis_model,
    ));
    let wake = Arc::new(tokio::sync::Notify::new());
    let worker = spawn_worker(Arc::clone(&memory), Arc::clone(&wake), WORKER_INTERVAL);
    let dreamer = spawn_deriver(Arc::clone(&memory), DERIVE_INTERVAL);
    let config = mnem_server::ServerConfig {
        limits: mnem_server::ServerLimits {
            max_body_bytes: args.max_body_bytes,
            requests_per_second: args.rate_limit,
            burst: args.burst,
            unverified_per_minute: args.unverified_per_minute,
        },
        allowed_hosts: args.allowed_hosts.clone(),
        metrics_token: args.metrics_token.clone(),
        trusted_proxies: args.trusted_proxies.clone(),
    };
    let router = mnem_server::router(
        mnem_api::Operations::new(memory).notifying(wake),
        auth,
        &config,
    );
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| Failure::Runtime(format!("cannot listen on {}: {e}", args.listen)))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    // Scripts wait for this line (on stderr, like every log) before sending requests; it
    // names the command that was typed.
    let command = if console_key.is_some() { "ui" } else { "serve" };
    eprintln!(
        "mnem {command}: listening on http://{bound} (MCP at /mcp, JSON API at /v1/, console at /ui)"
    );
    if let Some(key) = &console_key {
        println!("open the console: http://{bound}/ui#key={}", key.token());
        let _ = std::io::stdout().flush();
    }
    let served = mnem_server::serve(listener, router, shutdown_signal()).await;
    worker.abort();
    dreamer.abort();
    served.map_err(|e| Failure::Runtime(format!("server failed: {e}")))
}

/// Resolves on Ctrl-C, SIGTERM or SIGHUP (the terminal closed), so in-flight requests
/// finish before the process ends.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hangup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hangup.recv() => {}
                }
            }
            _ => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

async fn team<S: Backend>(
    command: &args::TeamCommand,
    store: S,
    json: bool,
) -> Result<(), Failure> {
    match command {
        args::TeamCommand::Create { name } => {
            let id = store.create_team(name).await?;
            render::team_created(name, id, json);
        }
    }
    Ok(())
}

async fn key<S: Backend>(cli: &Cli, command: &args::KeyCommand, store: S) -> Result<(), Failure> {
    let auth = Authenticator::new(Arc::new(store.clone()));
    match command {
        args::KeyCommand::Create(args) => {
            let profile = args.profile.as_deref().unwrap_or(&cli.as_profile);
            let expires_at = args.expires_at.or_else(|| {
                args.expires_in_days
                    .map(|days| store.clock().now().plus_seconds(i64::from(days) * 86_400))
            });
            if args.scope.is_some() {
                eprintln!(
                    "warning: `key create --scope` is now `--access` (--scope names a path \
                     everywhere else); the old spelling still works"
                );
            }
            // The parser requires one of the two.
            let access = args
                .access
                .or(args.scope)
                .ok_or_else(|| Failure::Input("--access: give read, write or admin".into()))?;
            let issued = auth
                .issue(&cli.team, profile, access, expires_at)
                .await
                .map_err(auth_failure)?;
            render::key_created(&issued, cli.json);
        }
        args::KeyCommand::Revoke { prefix } => {
            let record = auth
                .revoke(&cli.team, prefix)
                .await
                .map_err(|err| match err {
                    // A key is looked for in one team only: say which, since `--team` is easy
                    // to leave out (it defaults to `local`).
                    AuthError::Store(StoreError::KeyNotFound { prefix }) => {
                        Failure::Input(format!(
                            "API key `{prefix}` not found in team `{}`; pass the key's team with \
                     --team (`mnem --team TEAM key list` lists a team's keys)",
                            cli.team
                        ))
                    }
                    other => auth_failure(other),
                })?;
            render::keys(std::slice::from_ref(&record), cli.json);
        }
        args::KeyCommand::List => render::keys(&store.team_keys(&cli.team).await?, cli.json),
    }
    Ok(())
}

fn auth_failure(err: AuthError) -> Failure {
    match err {
        AuthError::Store(store) => store.into(),
        other => Failure::Runtime(other.to_string()),
    }
}
