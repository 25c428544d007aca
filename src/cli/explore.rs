//! `courier explore [--messages N] [--restarts R] [--mutant NAME] [--port P]`: serves
//! stateright's Explorer for the Courier model on 127.0.0.1, so a person can
//! walk the state space by hand: every property with its status, the next
//! inputs to choose from, and each state shown readably (the pending lists,
//! the phase and awaited point, the ghost owed set). Ctrl-C stops it with
//! exit 0; a busy port or a bad variant exits 2.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::process::ExitCode;

use courier::variant::MutantArg;
use courier_model::{Bounds, Space};
use stateright::Model as _;

/// Arguments of `courier explore`.
#[derive(clap::Args)]
pub(crate) struct Args {
    /// Distinct messages inserted over a path (ids A, B, ...; at most 26).
    #[arg(
        long,
        default_value_t = 2,
        value_parser = clap::value_parser!(u8).range(1..=26),
        allow_negative_numbers = true
    )]
    messages: u8,
    /// Crashes and resumes over a path (0: none).
    #[arg(long, default_value_t = Bounds::default().restarts, allow_negative_numbers = true)]
    restarts: u8,
    /// Explore a planted bug of SPEC §8 (needs `--features mutants`).
    #[arg(long, value_name = "NAME")]
    mutant: Option<MutantArg>,
    /// The port on 127.0.0.1 (0: any free port, printed).
    #[arg(long, default_value_t = 3000, allow_negative_numbers = true)]
    port: u16,
}

pub(crate) fn main(args: &Args) -> ExitCode {
    let Some(agent) = super::agent(args.mutant) else {
        return ExitCode::from(2);
    };
    let bounds = Bounds {
        messages: args.messages,
        restarts: args.restarts,
        ..Bounds::default()
    };
    let asked = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    // The Explorer's server panics on a port it cannot bind; say why instead.
    // Binding first also turns `--port 0` into the port the system picked,
    // which is the one printed and served (freed just before the server
    // binds it again).
    let address = match TcpListener::bind(asked).and_then(|probe| probe.local_addr()) {
        Ok(address) => address,
        Err(error) => {
            eprintln!(
                "error: --port {}: cannot listen on {asked}: {error}",
                args.port
            );
            return ExitCode::from(2);
        }
    };
    if let Err(error) = ctrlc::set_handler(|| {
        println!("explorer stopped");
        std::process::exit(0);
    }) {
        eprintln!("error: cannot handle Ctrl-C: {error}");
        return ExitCode::from(2);
    }
    let variant = args.mutant.map(MutantArg::name).unwrap_or("default");
    println!(
        "courier explore: variant={variant} messages={} cancels={} edits={} steps={} restarts={}",
        bounds.messages, bounds.cancels, bounds.edits, bounds.steps, bounds.restarts
    );
    println!("Explorer: http://{address}/ (Ctrl-C stops it)");
    Space::new(bounds, agent, true).checker().serve(address);
    ExitCode::SUCCESS
}
