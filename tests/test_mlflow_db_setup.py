"""The MLflow database setup (images/mlflow/db_setup.py) run against real PostgreSQL servers, 15 and
16 (tests/postgres.py), set up the way RDS sets up an instance: a master user that may create roles
and databases but is no superuser, the instance's first database owned by it, and a `rds_iam` role
(RDS's own: a login that has it must present an IAM token). Authentication is trust here: what is
tested is who may do what once logged in, and who has rds_iam.

"Has rds_iam" is inherited membership (pg_has_role ... 'USAGE'). From 16 on, PostgreSQL makes
every role a CREATEROLE user creates a member of its creator with ADMIN OPTION but without
INHERIT or SET, so the RDS master is a plain MEMBER of every role it makes, rds_iam's members
among them; yet AWS's own procedure has the master create IAM users and grant them rds_iam, and
on RDS 16 a membership WITH INHERIT FALSE keeps the master's password login
(crossplane-contrib/provider-sql#359). So RDS asks for a token of whoever inherits rds_iam."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from addons.mlflow.store import APP_USERNAME, DATABASE_NAME, MASTER_USERNAME, OWNER_ROLE
from tests.postgres import MAJOR_VERSIONS, postgres_server, server_binaries

# Left out of `make check` (a real PostgreSQL server per version); `make test` runs it.
pytestmark = pytest.mark.slow

psycopg2 = pytest.importorskip("psycopg2")

ROOT = Path(__file__).resolve().parents[1]
AUTH_DATABASE = "mlflow_auth"


def setup_module():
    spec = importlib.util.spec_from_file_location("db_setup", ROOT / "images" / "mlflow" / "db_setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=MAJOR_VERSIONS, ids=lambda major: f"postgres{major}")
def server(request) -> Iterator[dict[str, str]]:
    major = request.param
    binaries = server_binaries(major)
    if binaries is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI needs PostgreSQL {major}'s server binaries (make test installs them)")
        pytest.skip(f"SKIPPING the MLflow database setup on PostgreSQL {major}: no server binaries (run make test)")
    with postgres_server(binaries) as settings:
        rds_like(settings, major)
        yield settings


def login(settings: dict[str, str], user: str, database: str):
    connection = psycopg2.connect(host=settings["host"], port=settings["port"], user=user, dbname=database)
    connection.autocommit = True
    return connection


def execute(settings: dict[str, str], user: str, database: str, *statements: str) -> list[tuple]:
    connection = login(settings, user, database)
    try:
        rows: list[tuple] = []
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
                if cursor.description is not None:
                    rows = cursor.fetchall()
        return rows
    finally:
        connection.close()


def rds_like(settings: dict[str, str], major: int) -> None:
    """What RDS has made before anyone logs in: rds_iam, the master user (CREATEROLE and CREATEDB,
    not a superuser) and the instance's database (db_name), owned by the master. From 16 on,
    granting a role takes ADMIN OPTION on it: the master may grant rds_iam (AWS documents it), as
    if through rds_superuser, without inheriting it."""
    statements = [
        "CREATE ROLE rds_iam NOLOGIN",
        f"CREATE ROLE {MASTER_USERNAME} LOGIN CREATEROLE CREATEDB",
        f"CREATE DATABASE {DATABASE_NAME} OWNER {MASTER_USERNAME}",
    ]
    if major >= 16:
        statements.append(f"GRANT rds_iam TO {MASTER_USERNAME} WITH ADMIN OPTION, INHERIT FALSE, SET FALSE")
    execute(settings, "postgres", "postgres", *statements)


def run_setup(settings: dict[str, str]) -> list[str]:
    module = setup_module()
    return module.set_up(
        lambda database: login(settings, MASTER_USERNAME, database),
        master=MASTER_USERNAME,
        app=APP_USERNAME,
        owner=OWNER_ROLE,
        databases=[DATABASE_NAME, AUTH_DATABASE],
    )


def member(settings: dict[str, str], role: str, of: str) -> bool:
    """Whether `role` inherits what `of` has (the membership RDS's rds_iam rule goes by)."""
    ((answer,),) = execute(settings, "postgres", "postgres", f"SELECT pg_has_role('{role}', '{of}', 'USAGE')")
    return bool(answer)


def owner_of(settings: dict[str, str], database: str, kind: str, name: str) -> str:
    queries = {
        "database": f"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '{name}'",
        "relation": f"SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = '{name}'::regclass",
        "type": f"SELECT pg_get_userbyid(typowner) FROM pg_type WHERE oid = '{name}'::regtype",
    }
    ((owner,),) = execute(settings, "postgres", database, queries[kind])
    return str(owner)


def test_the_server_logs_in_only_through_rds_iam_and_the_master_keeps_its_password(server):
    """The app role is a member of rds_iam (RDS then demands an IAM token of it); the master user,
    which hands the databases over, is a member of the owner role only. A setup that made the master
    a member of the app role instead (the obvious way to let it give the app its objects) would make
    it an indirect member of rds_iam: RDS would refuse its password, and the setup would lock itself out."""
    assert run_setup(server) == []
    assert member(server, APP_USERNAME, "rds_iam") and member(server, APP_USERNAME, OWNER_ROLE)
    assert member(server, MASTER_USERNAME, OWNER_ROLE)
    assert not member(server, MASTER_USERNAME, "rds_iam") and not member(server, MASTER_USERNAME, APP_USERNAME)
    ((login_, superuser, createrole, createdb),) = execute(
        server,
        "postgres",
        "postgres",
        f"SELECT rolcanlogin, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = '{APP_USERNAME}'",
    )
    assert login_ and not (superuser or createrole or createdb)
    ((owner_can_login,),) = execute(
        server, "postgres", "postgres", f"SELECT rolcanlogin FROM pg_roles WHERE rolname = '{OWNER_ROLE}'"
    )
    assert not owner_can_login


def test_mlflow_migrations_run_as_the_app_and_their_tables_belong_to_the_owner(server):
    run_setup(server)
    for database in (DATABASE_NAME, AUTH_DATABASE):
        assert owner_of(server, database, "database", database) == OWNER_ROLE
        ((session, acting),) = execute(server, APP_USERNAME, database, "SELECT session_user, current_user")
        assert (session, acting) == (APP_USERNAME, OWNER_ROLE)
        execute(server, APP_USERNAME, database, "CREATE TABLE alembic_version (version_num varchar(32))")
        assert owner_of(server, database, "relation", "alembic_version") == OWNER_ROLE
    # The app may not widen its own reach.
    for statement in ("CREATE DATABASE other", "CREATE ROLE other"):
        with pytest.raises(psycopg2.errors.InsufficientPrivilege):
            execute(server, APP_USERNAME, DATABASE_NAME, statement)


def test_nobody_else_may_connect_to_mlflows_databases(server):
    run_setup(server)
    execute(server, "postgres", "postgres", "CREATE ROLE stranger LOGIN")
    for database in (DATABASE_NAME, AUTH_DATABASE):
        with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
            login(server, "stranger", database)


def test_a_platform_whose_server_logged_in_as_the_master_is_handed_over(server):
    """Before, MLflow logged in as the master user: its tables, sequences, views and types are the
    master's. The setup hands them to the owner (a sequence a column owns goes with its table), the
    app migrates and writes them, and a second run finds nothing left to move."""
    execute(
        server,
        MASTER_USERNAME,
        DATABASE_NAME,
        "CREATE TYPE lifecycle AS ENUM ('active', 'deleted')",
        "CREATE DOMAIN short_text AS varchar(250)",
        "CREATE TABLE experiments (experiment_id serial PRIMARY KEY, name short_text, stage lifecycle)",
        "CREATE SEQUENCE free_counter",
        "CREATE VIEW live AS SELECT * FROM experiments WHERE stage = 'active'",
        f"CREATE DATABASE {AUTH_DATABASE}",
    )
    execute(server, MASTER_USERNAME, AUTH_DATABASE, "CREATE TABLE users (id serial PRIMARY KEY, username text)")

    moved = run_setup(server)
    assert sorted(moved) == sorted(
        [
            f"{DATABASE_NAME}: table public.experiments",
            f"{DATABASE_NAME}: view public.live",
            f"{DATABASE_NAME}: sequence public.free_counter",
            f"{DATABASE_NAME}: type public.lifecycle",
            f"{DATABASE_NAME}: domain public.short_text",
            f"{AUTH_DATABASE}: table public.users",
        ]
    )
    for name in ("experiments", "experiments_experiment_id_seq", "live", "free_counter"):
        assert owner_of(server, DATABASE_NAME, "relation", name) == OWNER_ROLE, name
    assert owner_of(server, DATABASE_NAME, "type", "lifecycle") == OWNER_ROLE
    assert owner_of(server, AUTH_DATABASE, "relation", "users_id_seq") == OWNER_ROLE
    execute(
        server,
        APP_USERNAME,
        DATABASE_NAME,
        "ALTER TABLE experiments ADD COLUMN tags text",  # a migration
        "INSERT INTO experiments (name, stage) VALUES ('first', 'active')",  # the serial's sequence
        "SELECT nextval('free_counter')",
    )
    execute(server, APP_USERNAME, AUTH_DATABASE, "INSERT INTO users (username) VALUES ('admin')")
    assert run_setup(server) == []
