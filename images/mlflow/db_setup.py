"""The MLflow database's setup: a Job the addons layer runs (and waits for) before the server starts,
with the MLflow image (boto3, psycopg2). It is the only thing that logs in as the RDS master user,
whose password it reads from the RDS-managed secret; the server never can.

What it makes, idempotently (a second run changes nothing):
- OWNER_ROLE, without a login: it owns MLflow's databases and every table in them.
- APP_ROLE, the server's login: a member of rds_iam (RDS then admits it only with an IAM token) and
  of OWNER_ROLE, and it acts as OWNER_ROLE from login on (its `role` setting), so the tables MLflow's
  migrations create belong to the owner, not to the login.
- The master user is a member of OWNER_ROLE (to hand databases and tables over), never of APP_ROLE:
  it keeps no path to rds_iam and keeps its password login.
- The tracking and basic-auth databases, owned by OWNER_ROLE; nobody else may connect.
- Databases and objects the master user still owns in them (a platform whose server logged in as
  the master before) are handed to OWNER_ROLE.

Environment: DB_SECRET_ARN, AWS_REGION, APP_ROLE, OWNER_ROLE, AUTH_DATABASE, RDS_CA_BUNDLE_URL and
libpq's PGHOST/PGPORT/PGDATABASE/PGSSLMODE/PGSSLROOTCERT.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# ALTER ... OWNER TO per relation kind (pg_class.relkind). Indexes and TOAST tables follow their
# table; a sequence a column owns (serial, identity) follows its table too and is skipped here.
RELATION_KINDS = {"r": "TABLE", "p": "TABLE", "v": "VIEW", "m": "MATERIALIZED VIEW", "f": "FOREIGN TABLE"}
SYSTEM_SCHEMAS = "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%%'"


def role_exists(cursor: Any, role: str) -> bool:
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
    return cursor.fetchone() is not None


def make_roles(cursor: Any, *, master: str, app: str, owner: str) -> None:
    from psycopg2 import sql

    if not role_exists(cursor, owner):
        cursor.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(owner)))
    if not role_exists(cursor, app):
        cursor.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(app)))
    for member, of in ((master, owner), (app, owner), (app, "rds_iam")):
        cursor.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(of), sql.Identifier(member)))
    cursor.execute(sql.SQL("ALTER ROLE {} SET role = {}").format(sql.Identifier(app), sql.Literal(owner)))


def make_database(cursor: Any, name: str, *, owner: str) -> None:
    from psycopg2 import sql

    cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
    if cursor.fetchone() is None:
        cursor.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(owner)))
    else:
        cursor.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(name), sql.Identifier(owner)))
    cursor.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(sql.Identifier(name)))


def hand_over_objects(cursor: Any, *, master: str, owner: str) -> list[str]:
    """Give OWNER_ROLE what the master user owns in this database outside the system schemas:
    schemas, tables, views, free-standing sequences, and enum and domain types. Returns what moved."""
    from psycopg2 import sql

    moved: list[str] = []

    def alter(kind: str, qualified: sql.Composable, label: str) -> None:
        cursor.execute(sql.SQL("ALTER {} {} OWNER TO {}").format(sql.SQL(kind), qualified, sql.Identifier(owner)))
        moved.append(f"{kind.lower()} {label}")

    cursor.execute(
        f"SELECT n.nspname FROM pg_namespace n WHERE pg_get_userbyid(n.nspowner) = %s AND {SYSTEM_SCHEMAS}",
        (master,),
    )
    for (schema,) in cursor.fetchall():
        alter("SCHEMA", sql.Identifier(schema), schema)
    cursor.execute(
        "SELECT n.nspname, c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" WHERE pg_get_userbyid(c.relowner) = %s AND {SYSTEM_SCHEMAS} AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        " ORDER BY c.relkind, n.nspname, c.relname",
        (master,),
    )
    for schema, name, kind in cursor.fetchall():
        alter(RELATION_KINDS[kind], sql.Identifier(schema, name), f"{schema}.{name}")
    # Sequences that no column owns (those that one does moved with their table above).
    cursor.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" WHERE pg_get_userbyid(c.relowner) = %s AND {SYSTEM_SCHEMAS} AND c.relkind = 'S'"
        " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass"
        " AND d.objid = c.oid AND d.deptype IN ('a', 'i'))",
        (master,),
    )
    for schema, name in cursor.fetchall():
        alter("SEQUENCE", sql.Identifier(schema, name), f"{schema}.{name}")
    cursor.execute(
        "SELECT n.nspname, t.typname, t.typtype FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace"
        f" WHERE pg_get_userbyid(t.typowner) = %s AND {SYSTEM_SCHEMAS} AND t.typtype IN ('e', 'd')",
        (master,),
    )
    for schema, name, kind in cursor.fetchall():
        alter("DOMAIN" if kind == "d" else "TYPE", sql.Identifier(schema, name), f"{schema}.{name}")
    return moved


@contextmanager
def autocommit(connect: Callable[[str], Any], database: str) -> Iterator[Any]:
    connection = connect(database)
    connection.autocommit = True  # CREATE DATABASE cannot run in a transaction
    try:
        with connection.cursor() as cursor:
            yield cursor
    finally:
        connection.close()


def set_up(connect: Callable[[str], Any], *, master: str, app: str, owner: str, databases: list[str]) -> list[str]:
    """Roles, databases, then each database's objects; `connect(database)` logs in as the master.
    Returns what changed hands (empty once everything is the owner's)."""
    with autocommit(connect, databases[0]) as cursor:
        make_roles(cursor, master=master, app=app, owner=owner)
        for name in databases:
            make_database(cursor, name, owner=owner)
    moved: list[str] = []
    for name in databases:
        with autocommit(connect, name) as cursor:
            moved += [f"{name}: {what}" for what in hand_over_objects(cursor, master=master, owner=owner)]
    return moved


def main() -> None:
    import boto3  # in the MLflow image
    import psycopg2
    from db_login import ensure_ca_bundle  # beside this script in the same ConfigMap

    environ = dict(os.environ)
    ensure_ca_bundle(environ["PGSSLROOTCERT"], environ["RDS_CA_BUNDLE_URL"])
    secrets = boto3.client("secretsmanager", region_name=environ["AWS_REGION"])
    master = json.loads(secrets.get_secret_value(SecretId=environ["DB_SECRET_ARN"])["SecretString"])

    def connect(database: str) -> Any:
        return psycopg2.connect(dbname=database, user=master["username"], password=master["password"])

    moved = set_up(
        connect,
        master=master["username"],
        app=environ["APP_ROLE"],
        owner=environ["OWNER_ROLE"],
        databases=[environ["PGDATABASE"], environ["AUTH_DATABASE"]],
    )
    for what in moved:
        print(f"db-setup: handed to {environ['OWNER_ROLE']}: {what}", flush=True)
    print(f"db-setup: {environ['APP_ROLE']} logs in with IAM tokens and acts as {environ['OWNER_ROLE']}", flush=True)


if __name__ == "__main__":
    main()
