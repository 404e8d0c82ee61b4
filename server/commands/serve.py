"""serve and worker."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from schemas.settings import Settings, parse_proxies
from server.cli import add_json_flag, emit, report_error, run_with_runtime
from server.worker import Worker, freeze_startup_heap
from storage.migrate import check_current, preflight
from tools.runtime import Runtime


def cmd_serve(args: argparse.Namespace) -> int:
    # The web stack (uvicorn, Starlette, the REST and MCP mounts, the dispatcher) only for `serve`: `worker`
    # shares this module and runs none of it.
    import uvicorn

    from server.app import build_app
    from server.listen import PortUnavailable, bind, public_url_for
    from server.rest import UVICORN_HEAD_OPTIONS

    # The port first: a busy one is one line, before the database is checked or a worker starts.
    try:
        listening = bind(args.host, args.port, command="serve")
    except PortUnavailable as exc:
        return report_error(False, "REFUSED", str(exc))
    overrides: dict[str, object] = {"worker_enabled": False} if args.no_worker else {}
    # Links (media downloads, the console, OAuth redirects) carry this server's own address unless
    # SOCIALPUB_PUBLIC_URL says otherwise.
    own = public_url_for(Settings.env_values().get("public_url"), args.host, args.port, command="serve")
    if own:
        overrides["public_url"] = own
    if args.allowed_hosts:
        overrides["allowed_hosts"] = tuple(h.strip().lower() for h in args.allowed_hosts.split(",") if h.strip())
    if args.forwarded_allow_ips is not None:
        overrides["trusted_proxies"] = parse_proxies(args.forwarded_allow_ips)
    try:
        settings = Settings.from_env(**overrides)
    except ValidationError as exc:
        listening.close()
        return report_error(False, "REFUSED", "; ".join(str(e["msg"]).removeprefix("Value error, ")
                                                        for e in exc.errors()))
    # Fail fast with the migration message instead of a stack trace from inside uvicorn's lifespan. The check
    # runs on an engine of its own, disposed in its own loop: the served runtime's engine must first connect
    # inside uvicorn's loop (asyncpg connections cannot move between loops).
    try:
        preflight(settings.resolved_database_url)
    except Exception:
        listening.close()
        raise
    app = build_app(Runtime.from_settings(settings))
    # log_config=None: uvicorn keeps the handlers `socialpub --log-format` set up (text or JSON lines).
    # h11 with a 1 MiB head buffer: an oversized query string or header block reaches server/rest.py CatchAll
    # and gets the envelope's 414/431; httptools (uvicorn's default when installed) refuses heads above ~80 KB
    # with a plain-text 400, and h11's default 16 KiB buffer drops the connection.
    # proxy_headers=False: the app resolves X-Forwarded-For itself, through exactly settings.trusted_proxies.
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower(), lifespan="on",
                            log_config=None, proxy_headers=False, **UVICORN_HEAD_OPTIONS)
    uvicorn.Server(config).run(sockets=[listening])
    return 0


async def cmd_worker(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    if args.metrics_port is not None:
        # A stand-alone worker serves no API; its publish and pass metrics get their own scrape port.
        from prometheus_client import start_http_server

        from server import metrics  # noqa: F401  (its series are registered before the port answers)

        start_http_server(args.metrics_port, addr=args.metrics_host)
    freeze_startup_heap()  # a process of its own: its start-up heap is never garbage
    worker = Worker(rt)
    if args.once:
        done = await worker.run_once()
        emit(args, {"processed": done}, f"worker pass done: {done} item(s) processed")
    else:
        await worker.run_until_signalled()


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve")  # help line: server.commands.COMMANDS
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-worker", action="store_true", help="do not run the publishing worker in this process")
    p.add_argument("--allowed-hosts", help="comma-separated host names MCP over HTTP accepts besides loopback "
                                           "(DNS rebinding protection; default $SOCIALPUB_ALLOWED_HOSTS)")
    p.add_argument("--forwarded-allow-ips", metavar="IPS",
                   help="comma-separated addresses or networks of the proxies whose X-Forwarded-For and "
                        "X-Forwarded-Proto are believed, or `none` (default $SOCIALPUB_TRUSTED_PROXIES, else "
                        "loopback only)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("worker")  # help line: server.commands.COMMANDS
    p.add_argument("--once", action="store_true", help="process what is due now, then exit")
    add_json_flag(p)
    p.add_argument("--metrics-port", type=int, help="serve Prometheus metrics of this worker on this port")
    p.add_argument("--metrics-host", default="127.0.0.1", help="address of --metrics-port (default 127.0.0.1)")
    p.set_defaults(func=run_with_runtime(cmd_worker))
