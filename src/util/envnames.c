/*
 * envnames.c — every OC_* environment variable anything of offcore reads,
 * in one table: liboffcore and the daemons warn about any other OC_* name
 * in their environment with the closest of these (util/config.h,
 * oc__env_check), so a misspelt OC_PLACMENT is said instead of silently
 * running the default, and one component's variable (OC_AGENT_MODE, the
 * library's) is never called a typo by another (offcored).
 * tests/env-names.py checks that every name a config table, a getenv()
 * or an *_ENV define in src/ declares is listed here.  Data only.
 */
#include "util/config.h"

#include <stddef.h>

const oc_env_name_t oc__env_names[] = {
    /* liboffcore: src/runtime/context.c's table, the bootstrap, keys */
    {"OC_PLACEMENT", "liboffcore"},
    {"OC_BUNDLE_SIZE", "liboffcore"},
    {"OC_BUFFERS_PER_DEST", "liboffcore"},
    {"OC_FLUSH_TIMEOUT_US", "liboffcore"},
    {"OC_POLL_BUDGET", "liboffcore"},
    {"OC_AGENT", "liboffcore"},
    {"OC_AGENT_CREDITS", "liboffcore"},
    {"OC_AGENT_MODE", "liboffcore"},
    {"OC_AGENT_CHANNEL", "liboffcore"},
    {"OC_JOB", "liboffcore"},
    {"OC_JOB_KEY", "liboffcore"},
    {"OC_RANK", "liboffcore"},
    {"OC_SIZE", "liboffcore"},
    {"OC_BOOTSTRAP_DIR", "liboffcore"},
    {"OC_BOOTSTRAP_TIMEOUT_S", "liboffcore"},
    {"OC_REQUIRE_TRANSPORT", "liboffcore"},
    {"OC_STALL_WARN_S", "liboffcore"},
    /* the collectives (src/coll/coll.c's table) */
    {"OC_COLL_REPRODUCIBLE", "liboffcore"},
    {"OC_COLL_SMALL", "liboffcore"},
    {"OC_COLL_CHUNK", "liboffcore"},
    {"OC_COLL_SHM_MAX", "liboffcore"},
    {"OC_COLL_WINDOW", "liboffcore"},
    {"OC_COLL_CMA", "liboffcore"},
    {"OC_COLL_AGENT_INLINE", "liboffcore"},
    {"OC_COLL_FAULT", "liboffcore"},
    {"OC_COLL_FAULT_AT", "liboffcore"},
    /* device buffers (src/gpu/gpu.c) */
    {"OC_LIBCUDA", "liboffcore, offcore doctor"},
    {"OC_GPU", "liboffcore"},
    {"OC_GPU_CHUNK", "liboffcore"},
    {"OC_GPU_SLOTS", "liboffcore"},
    /* every component */
    {"OC_LOG", "every component"},
    /* offcored (src/agent/main.c's table) and the cluster key */
    {"OC_AGENT_LISTEN", "offcored"},
    {"OC_AGENT_PEERS", "offcored"},
    {"OC_AGENT_NODE", "offcored"},
    {"OC_AGENT_THREADS", "offcored"},
    {"OC_AGENT_METRICS", "offcored, offcore stat"},
    {"OC_AGENT_CLUSTER_KEY", "offcored, offcore job-key"},
    {"OC_AGENT_BUNDLE_SIZE", "offcored"},
    {"OC_AGENT_BUFFERS", "offcored"},
    {"OC_AGENT_FLUSH_TIMEOUT_US", "offcored"},
    {"OC_AGENT_SHM_SLOTS", "offcored"},
    {"OC_AGENT_MAX_INFLIGHT", "offcored"},
    {"OC_AGENT_ROUTE", "offcored"},
    {"OC_AGENT_MAX_CONNS", "offcored"},
    {"OC_AGENT_HANDSHAKE_MS", "offcored"},
    {"OC_AGENT_METRICS_MAX_CONNS", "offcored"},
    {"OC_AGENT_ACCEPT_BACKOFF_MS", "offcored"},
    {"OC_AGENT_LOG_RATE", "offcored"},
    {"OC_AGENT_COLL_CMA", "offcored"},
    {"OC_AGENT_COLL_SPLIT_MIN", "offcored"},
    {"OC_AGENT_SOCKET_MODE", "offcored"},
    {"OC_CLUSTER_KEY", "offcored, offcore job-key"},
    /* offcore-dp's classifier (src/pkt/acl/acl.c): its lookup path */
    {"OC_ACL_PATH", "offcore-dp, the classifier"},
    /* the CLI */
    {"OC_NVMF_METRICS", "offcore nvmf"},
    {"OC_DP_CONTROL", "offcore dp"},
    {"OC_ADVISE_SCRIPT", "offcore advise"},
    {"OC_BUILD_DIR", "offcore advise"},
    /* the evaluation apps */
    {"OC_APP_PERF", "apps"},
    {"OC_APP_CPU", "apps"},
    /* the test suite's own (prefixes: a name ending in '_') */
    {"OC_TEST_", "tests"},
    {"OC_UTEST_", "tests"},
    {NULL, NULL}};
