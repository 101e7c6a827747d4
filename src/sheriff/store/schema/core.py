"""Pushes, jobs and what they ran: Job -N:M-> Manifest -N:M-> TestPath (SPEC §2).

A job row is one run of one task (Treeherder's job), identified by the tuple of plain
columns repository, build platform, machine platform, job group, job type, option
collection, tier and job kind: no hash. Strings that recur on many jobs (platforms,
groups, labels, queues, manifest and test paths) are interned in small tables and
referenced by integer, which is what keeps a job near 200 bytes; see docs/storage.md
for the measurements behind the manifest-set layout.

The job's references to those interned tables (repository, platforms, group, type,
queue) are plain integers without a foreign key constraint: PostgreSQL checks a foreign
key with one trigger query per row, which cost three quarters of a bulk insert, while
the loader takes every id from those tables in the same transaction and nothing ever
deletes from them. References to rows that expire (push, manifest set) keep theirs.
"""

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from sheriff.store.schema.base import BigId, HexDigest, SlugId, UtcDateTime, metadata, string_enum

# Treeherder's job states and results as sheriff writes them (model/job.py; `retry` is a
# run that Taskcluster reran), and Taskcluster's treeherder `jobKind`. Native enums (4
# bytes) on PostgreSQL, plain strings on SQLite.
JOB_STATES = ("unscheduled", "pending", "running", "completed")
JOB_RESULTS = (
    "success",
    "testfailed",
    "busted",
    "exception",
    "usercancel",
    "superseded",
    "retry",
    "unknown",
)
JOB_KINDS = ("build", "test", "other")

repository = Table(
    "repository",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(64), nullable=False, unique=True),
    # The services its data was fetched from (migration 0009): links in the API and the
    # dashboard point there, not at whatever a later `sheriff serve` is configured with.
    Column("taskcluster_root_url", String(255)),
    Column("treeherder_url", String(255)),
)

push = Table(
    "push",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("repository_id", ForeignKey("repository.id"), nullable=False),
    Column("revision", String(40), nullable=False),
    Column("pushlog_id", Integer),
    Column("author", String(255)),
    Column("message", Text),  # the tip revision's commit message (migration 0009)
    Column("push_time", UtcDateTime, nullable=False),
    # The decision task's id is also the push's task group id.
    Column("decision_task_id", String(22)),
    UniqueConstraint("repository_id", "revision"),
    Index(None, "repository_id", "push_time"),
)

platform = Table(
    "platform",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("os_name", String(64), nullable=False),
    Column("platform", String(100), nullable=False),
    Column("architecture", String(64), nullable=False),
    UniqueConstraint("platform", "os_name", "architecture"),
)

job_group = Table(
    "job_group",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(255), nullable=False),
    Column("symbol", String(64), nullable=False),
    UniqueConstraint("name", "symbol"),
)

# Treeherder's job type: the name is the task label (`metadata.name`).
job_type = Table(
    "job_type",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(255), nullable=False),
    Column("symbol", String(64), nullable=False),
    UniqueConstraint("name", "symbol"),
)

task_queue = Table(
    "task_queue",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(255), nullable=False, unique=True),
)

manifest = Table(
    "manifest",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("path", String(1024), nullable=False, unique=True),
)

test_path = Table(
    "test_path",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("path", String(2048), nullable=False, unique=True),
)

# Manifest -N:M-> TestPath: the union of every tests-by-manifest.json seen.
manifest_test = Table(
    "manifest_test",
    metadata,
    Column("manifest_id", ForeignKey("manifest.id"), primary_key=True),
    Column("test_path_id", ForeignKey("test_path.id"), primary_key=True),
)

# A distinct set of manifests, stored once however many jobs ran it. `digest` (sha1 of
# the sorted manifest ids) is only the interning key, never a job's identity.
manifest_set = Table(
    "manifest_set",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("digest", HexDigest, nullable=False, unique=True),  # 20 bytes on PostgreSQL
    Column("size", Integer, nullable=False),
)

manifest_set_member = Table(
    "manifest_set_member",
    metadata,
    Column("manifest_set_id", ForeignKey("manifest_set.id"), primary_key=True),
    Column("manifest_id", ForeignKey("manifest.id"), primary_key=True),
    # Which sets contain a manifest: the first step of the similar-jobs query.
    Index(None, "manifest_id", "manifest_set_id"),
)

# What the decision task planned: a label's manifests on a push (manifests-by-task.json),
# used for jobs whose task definition has no MOZHARNESS_TEST_PATHS.
push_label_manifest_set = Table(
    "push_label_manifest_set",
    metadata,
    Column("push_id", ForeignKey("push.id", ondelete="CASCADE"), primary_key=True),
    Column("label", String(255), primary_key=True),
    Column("manifest_set_id", ForeignKey("manifest_set.id"), nullable=False),
)

job = Table(
    "job",
    metadata,
    # Fixed-width columns first, widest first, so PostgreSQL wastes no bytes on alignment.
    Column("id", BigId, primary_key=True),
    Column("submit_time", UtcDateTime, nullable=False),
    Column("start_time", UtcDateTime),
    Column("end_time", UtcDateTime),
    Column("push_id", ForeignKey("push.id", ondelete="CASCADE"), nullable=False),
    # Interned ids without a foreign key constraint (see the module docstring).
    Column("repository_id", Integer, nullable=False),
    Column("build_platform_id", Integer, nullable=False),
    Column("machine_platform_id", Integer, nullable=False),
    Column("job_group_id", Integer, nullable=False),
    Column("job_type_id", Integer, nullable=False),
    Column("task_queue_id", Integer, nullable=False),
    Column("manifest_set_id", ForeignKey("manifest_set.id")),
    Column("run_id", SmallInteger, nullable=False),
    Column("tier", SmallInteger, nullable=False),
    Column("classification_id", SmallInteger, nullable=False, server_default="1"),
    Column("retriggerable", Boolean, nullable=False, server_default="0"),
    # The identity tuple (SPEC §2) is repository, build and machine platform, job group,
    # job type (the label), option collection, tier and job kind; with the task and run
    # ids and the state below, that is the whole job.
    Column("task_id", SlugId, nullable=False),  # a uuid on PostgreSQL
    Column("option_collection", String(32), nullable=False),
    Column("job_kind", string_enum("job_kind", JOB_KINDS), nullable=False),
    Column("state", string_enum("job_state", JOB_STATES), nullable=False),
    Column("result", string_enum("job_result", JOB_RESULTS), nullable=False),
    Column("action", String(32)),  # tags.action: the action that created this task
    # extra.parent when it is not the push's decision task (an action task); null otherwise.
    Column("parent_task_id", String(22)),
    Column("test_type", String(32)),  # tags.test-type
    UniqueConstraint("task_id", "run_id"),
    Index(None, "push_id", "job_type_id"),
    # "Jobs on this platform configuration that ran these manifests, over these pushes."
    Index(None, "manifest_set_id", "push_id"),
    # No index on submit_time: `sheriff cycle` expires jobs through their push's time.
)
