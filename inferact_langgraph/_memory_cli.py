"""``inferact memory list|clear``: remembered feedback, per user and per task, from the CLI.

The store is named by ``--db``: a SQLite file (as the demo writes), a PostgreSQL DSN
(``postgresql://...``, the ``[postgres]`` extra) or the URL of a LangGraph server
(``http://127.0.0.1:2024``, its store API through ``langgraph_sdk``). ``--user alice`` is the
owner a run with ``langgraph_auth_user_id`` or ``user_id`` ``alice`` writes to; ``--shared``
is the namespace of runs that name no user; ``--owner org/acme`` any labels a
``memory_namespace=`` hook returns.

Example:
    >>> from typer.testing import CliRunner
    >>> result = CliRunner().invoke(memory_app, ["list", "--help"])
    >>> result.exit_code
    0
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from inferact_langgraph.guard.memory import SHARED_OWNER, FeedbackMemory

__all__ = ["DEMO_DB", "memory_app", "open_store", "owner_of", "resolve_db"]

memory_app = typer.Typer(
    name="memory",
    help="List or clear remembered feedback (InferAct's memory), per user and per task.",
    no_args_is_help=True,
)

#: The store ``--db`` names when it is not given: the demo's SQLite file, when it exists here.
DEMO_DB = ".inferact-demo.sqlite"

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="A SQLite file, a PostgreSQL DSN (postgresql://...) or a LangGraph server URL "
        "(e.g. http://127.0.0.1:2024 for langgraph dev). Default: the demo's "
        f"{DEMO_DB}, when it exists in this directory.",
    ),
]
UserOption = Annotated[
    str | None, typer.Option("--user", help="Only this user's feedback (their user id).")
]
SharedOption = Annotated[
    bool, typer.Option("--shared", metavar="", help="Only the feedback of runs that name no user.")
]
OwnerOption = Annotated[
    str | None,
    typer.Option("--owner", help="Only this owner, as labels joined by '/', e.g. org/acme."),
]
TaskOption = Annotated[
    str | None, typer.Option("--task", help="Only feedback on this task (its text).")
]


def owner_of(user: str | None, shared: bool, owner: str | None) -> tuple[str, ...] | None:
    """The owner the options name (``None``: every owner).

    Raises:
        typer.BadParameter: More than one of ``--user``, ``--shared``, ``--owner``.

    Example:
        >>> owner_of("alice", False, None), owner_of(None, True, None)
        (('user', 'alice'), ('shared',))
        >>> owner_of(None, False, "org/acme")
        ('org', 'acme')
    """
    given = [x for x in (user, shared or None, owner) if x is not None]
    if len(given) > 1:
        raise typer.BadParameter("give at most one of --user, --shared and --owner")
    if user is not None:
        if not user.strip():
            raise typer.BadParameter("--user must not be empty")
        return ("user", user)
    if shared:
        return SHARED_OWNER
    if owner is not None:
        labels = tuple(p for p in owner.split("/"))
        if not owner or any(not p for p in labels):
            raise typer.BadParameter(f"--owner must be labels joined by '/', got {owner!r}")
        return labels
    return None


@dataclass
class _Item:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any]


class _ServerStore:
    """A LangGraph server's store (``langgraph_sdk``), with the calls FeedbackMemory makes."""

    def __init__(self, url: str) -> None:
        from langgraph_sdk import get_sync_client

        self.url = url
        self.client = get_sync_client(url=url)

    @contextmanager
    def _reached(self) -> Iterator[None]:
        """One ``error:`` line and exit 1 when the server cannot be reached or refuses."""
        import httpx

        try:
            yield
        except httpx.HTTPError as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            typer.echo(f"error: --db {self.url}: cannot use its store ({reason})", err=True)
            raise typer.Exit(1) from None

    def search(self, prefix: Sequence[str], *, limit: int = 10, offset: int = 0) -> list[_Item]:
        with self._reached():
            page = self.client.store.search_items(list(prefix), limit=limit, offset=offset)
        return [_Item(tuple(i["namespace"]), i["key"], dict(i["value"])) for i in page["items"]]

    def delete(self, namespace: Sequence[str], key: str) -> None:
        with self._reached():
            self.client.store.delete_item(list(namespace), key)


def resolve_db(db: str | None, *, cwd: Path | None = None) -> str:
    """The store to open: ``db`` when given, else the demo's database when it exists.

    Raises:
        typer.BadParameter: No ``--db`` and no demo database in ``cwd``: the message lists
            what ``--db`` may name.

    Example:
        >>> resolve_db("postgresql://localhost/app")
        'postgresql://localhost/app'
    """
    if db is not None:
        return db
    if ((cwd or Path.cwd()) / DEMO_DB).is_file():
        typer.echo(f"reading {DEMO_DB} (the demo's database; --db names another)", err=True)
        return DEMO_DB
    raise typer.BadParameter(
        f"no --db given and no {DEMO_DB} (the demo's database) in this directory: give --db, "
        "a SQLite file, a PostgreSQL DSN (postgresql://...) or the URL of the LangGraph "
        "server that runs your graphs (e.g. http://127.0.0.1:2024 for langgraph dev)",
        param_hint="--db",
    )


@contextmanager
def open_store(db: str) -> Iterator[Any]:
    """The store ``--db`` names (a SQLite file, a PostgreSQL DSN or a server URL).

    Raises:
        typer.BadParameter: A SQLite path that is not a database, or a missing extra.
    """
    if db.startswith(("http://", "https://")):
        yield _ServerStore(db)
        return
    if db.startswith(("postgres://", "postgresql://")):
        try:
            from langgraph.store.postgres import PostgresStore
        except ImportError:  # pragma: no cover - the [postgres] extra is not installed
            raise typer.BadParameter(
                "a PostgreSQL --db needs the [postgres] extra", param_hint="--db"
            ) from None
        with PostgresStore.from_conn_string(db) as store:
            store.setup()
            yield store
        return
    path = Path(db)
    if not path.is_file():
        raise typer.BadParameter(f"{db}: no such SQLite file", param_hint="--db")
    from langgraph.store.sqlite import SqliteStore

    conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        lite = SqliteStore(conn)
        try:
            lite.setup()
        except sqlite3.DatabaseError as exc:
            raise typer.BadParameter(
                f"{db}: not a SQLite database ({exc})", param_hint="--db"
            ) from None
        yield lite
    finally:
        conn.close()


def _when(entry: dict[str, Any]) -> str:
    stamp = entry.get("time")
    if not isinstance(stamp, (int, float)):
        return "-"
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S")


@memory_app.command("list")
def list_command(
    db: DbOption = None,
    user: UserOption = None,
    shared: SharedOption = False,
    owner: OwnerOption = None,
    task: TaskOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="One JSON object per line.")
    ] = False,
) -> None:
    """List remembered feedback: owner, task, tool and the human's words."""
    who = owner_of(user, shared, owner)
    with open_store(resolve_db(db)) as store:
        entries = FeedbackMemory().list_entries(store, owner=who, task=task)
    for entry in entries:
        if as_json:
            shown = {k: v for k, v in entry.items() if k != "namespace"}
            typer.echo(json.dumps(shown, ensure_ascii=False, default=str))
        else:
            typer.echo(
                f"{_when(entry)}  {'/'.join(entry['owner'])}  {entry.get('tool', '-')}  "
                f"task: {entry.get('task', entry['task_key'])!r}  "
                f"feedback: {entry.get('feedback', '')!r}"
            )
    if not as_json:
        typer.echo(f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}", err=True)


@memory_app.command("clear")
def clear_command(
    db: DbOption = None,
    user: UserOption = None,
    shared: SharedOption = False,
    owner: OwnerOption = None,
    task: TaskOption = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
    ] = False,
) -> None:
    """Delete remembered feedback (every owner's, unless --user/--shared/--owner/--task)."""
    who = owner_of(user, shared, owner)
    db = resolve_db(db)
    scope = " and ".join(
        x
        for x in (
            f"owner {'/'.join(who)}" if who else "every owner",
            f"task {task!r}" if task is not None else None,
        )
        if x
    )
    if not yes and not typer.confirm(f"Delete the remembered feedback of {scope}?"):
        raise typer.Exit(1)
    with open_store(db) as store:
        count = FeedbackMemory().clear(store, owner=who, task=task)
    typer.echo(f"deleted {count} entr{'y' if count == 1 else 'ies'} ({scope})")
