/*
 * ucx_tcp_fix.c - LD_PRELOAD helper for MPICH 4.0.2 (ch4:ucx) + UCX 1.13
 * running over TCP, as used by scripts/netsim.sh (see docs/netsim.md).
 *
 * It works around two problems of that MPICH/UCX pair when ranks talk over
 * the UCX tcp transport (UCX_TLS=tcp,self):
 *
 *  (1) MPI_Finalize hangs in most 8-rank runs: MPICH disconnects every
 *      endpoint with ucp_disconnect_nb() and waits for the requests, which
 *      over tcp may never complete (fixed upstream in MPICH 4.2.0).  We make
 *      ucp_disconnect_nb() a no-op that reports immediate completion (NULL).
 *      The endpoints are then torn down by ucp_worker_destroy()/process exit.
 *
 *  (2) Idle ranks busy-poll ucp_worker_progress() and, with more ranks than
 *      cores (8 ranks on 2 cores), starve the ranks that have work: a 4-byte
 *      allreduce took ~25 ms.  We add UCP_FEATURE_WAKEUP to the context
 *      features in ucp_init_version() and, after NETSIM_FIX_SPINS (default 20)
 *      consecutive empty ucp_worker_progress() calls, arm the worker and
 *      poll() its event fd for at most NETSIM_FIX_POLL_MS (default 1) ms,
 *      which yields the core to the ranks that can make progress.
 *
 * Problem (3) of docs/netsim.md (rendezvous halving throughput) needs no code:
 * netsim.sh sets UCX_RNDV_THRESH=inf.
 *
 * Environment knobs (read once, at first use):
 *   NETSIM_FIX_DISCONNECT=0  keep the real ucp_disconnect_nb (shows the hang)
 *   NETSIM_FIX_WAKEUP=0      keep busy polling (shows the starvation)
 *   NETSIM_FIX_SPINS=N       empty progress calls before sleeping (default 20)
 *   NETSIM_FIX_POLL_MS=N     poll() timeout in ms (default 1)
 *
 * The few UCX types and prototypes needed are declared here (they match the
 * UCX 1.x ABI, see <ucp/api/ucp.h>), so no -dev package is needed to build:
 *   gcc -shared -fPIC -O2 -Wall -Wextra -Werror ucx_tcp_fix.c -o x.so -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- minimal UCX ABI declarations (UCX 1.x, ucp/api/ucp.h, ucp_def.h) ---- */
typedef int ucs_status_t;                 /* enum ucs_status_t */
typedef void *ucs_status_ptr_t;
typedef struct ucp_context *ucp_context_h;
typedef struct ucp_worker *ucp_worker_h;
typedef struct ucp_ep *ucp_ep_h;
typedef struct ucp_config ucp_config_t;

/* Only the first two members of ucp_params_t are touched; they have been at
 * these offsets since UCX 1.0 (field_mask first, for ABI compatibility). */
typedef struct {
    uint64_t field_mask;
    uint64_t features;
} netsim_ucp_params_head_t;

#define NETSIM_UCS_OK               0
#define NETSIM_UCP_PARAM_FEATURES   (1ULL << 0) /* UCP_PARAM_FIELD_FEATURES */
#define NETSIM_UCP_FEATURE_WAKEUP   (1ULL << 4) /* UCP_FEATURE_WAKEUP */

ucs_status_t ucp_init_version(unsigned api_major_version,
                              unsigned api_minor_version, const void *params,
                              const ucp_config_t *config,
                              ucp_context_h *context_p);
unsigned ucp_worker_progress(ucp_worker_h worker);
ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep);

/* Looked up lazily: we must not require them at load time, so that the
 * helper is harmless in processes that do not use UCX (mpiexec, shells). */
typedef ucs_status_t (*init_fn_t)(unsigned, unsigned, const void *,
                                  const ucp_config_t *, ucp_context_h *);
typedef unsigned (*progress_fn_t)(ucp_worker_h);
typedef ucs_status_ptr_t (*disconnect_fn_t)(ucp_ep_h);
typedef ucs_status_t (*arm_fn_t)(ucp_worker_h);
typedef ucs_status_t (*efd_fn_t)(ucp_worker_h, int *);

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return dflt;
    return atoi(v);
}

/* Resolve a symbol of the next object (libucp) or die loudly: continuing
 * without the real function would only produce a harder-to-debug crash. */
static void *next_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p == NULL) {
        fprintf(stderr, "ucx_tcp_fix: cannot resolve %s: %s\n", name,
                dlerror());
        abort();
    }
    return p;
}

/* Settings are plain ints written once; benign races only (same values). */
static int cfg_loaded;
static int cfg_fix_disconnect = 1;
static int cfg_fix_wakeup = 1;
static int cfg_spins = 20;
static int cfg_poll_ms = 1;

static void load_cfg(void)
{
    if (cfg_loaded)
        return;
    cfg_fix_disconnect = env_int("NETSIM_FIX_DISCONNECT", 1);
    cfg_fix_wakeup = env_int("NETSIM_FIX_WAKEUP", 1);
    cfg_spins = env_int("NETSIM_FIX_SPINS", 20);
    if (cfg_spins < 1)
        cfg_spins = 1;
    cfg_poll_ms = env_int("NETSIM_FIX_POLL_MS", 1);
    if (cfg_poll_ms < 0)
        cfg_poll_ms = 0;
    cfg_loaded = 1;
}

/* Set when the context really got UCP_FEATURE_WAKEUP; without it
 * ucp_worker_arm/get_efd would fail, so we must keep plain busy polling. */
static int wakeup_enabled;

ucs_status_t ucp_init_version(unsigned api_major_version,
                              unsigned api_minor_version, const void *params,
                              const ucp_config_t *config,
                              ucp_context_h *context_p)
{
    static init_fn_t real;
    netsim_ucp_params_head_t *head = (netsim_ucp_params_head_t *)params;
    uint64_t saved = 0;
    int patched = 0;
    ucs_status_t st;

    if (real == NULL)
        real = (init_fn_t)next_sym("ucp_init_version");
    load_cfg();

    /* The caller's struct is declared const but lives in its writable
     * memory; patch it in place (we cannot copy it: its size depends on the
     * UCX version) and restore it afterwards. */
    if (cfg_fix_wakeup && head != NULL &&
        (head->field_mask & NETSIM_UCP_PARAM_FEATURES)) {
        saved = head->features;
        head->features |= NETSIM_UCP_FEATURE_WAKEUP;
        patched = 1;
    }
    st = real(api_major_version, api_minor_version, params, config, context_p);
    if (patched) {
        head->features = saved;
        if (st == NETSIM_UCS_OK)
            wakeup_enabled = 1;
    }
    return st;
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    static disconnect_fn_t real;

    load_cfg();
    if (cfg_fix_disconnect)
        return NULL; /* "completed immediately"; see problem (1) above */
    if (real == NULL)
        real = (disconnect_fn_t)next_sym("ucp_disconnect_nb");
    return real(ep);
}

/* Per-thread idle state: a progress thread normally drives one worker, so a
 * (worker, counter) pair per thread avoids any locking. */
static __thread ucp_worker_h idle_worker;
static __thread int idle_count;
static __thread int idle_broken; /* get_efd failed for idle_worker */

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    static progress_fn_t real;
    static arm_fn_t arm;
    static efd_fn_t get_efd;
    unsigned n;
    int fd;
    struct pollfd pfd;

    if (real == NULL)
        real = (progress_fn_t)next_sym("ucp_worker_progress");
    n = real(worker);
    if (!wakeup_enabled)
        return n;

    if (worker != idle_worker) {
        idle_worker = worker;
        idle_count = 0;
        idle_broken = 0;
    }
    if (n != 0 || idle_broken) {
        idle_count = 0;
        return n;
    }
    if (++idle_count < cfg_spins)
        return n;

    if (arm == NULL) {
        arm = (arm_fn_t)next_sym("ucp_worker_arm");
        get_efd = (efd_fn_t)next_sym("ucp_worker_get_efd");
    }
    if (get_efd(worker, &fd) != NETSIM_UCS_OK) {
        idle_broken = 1; /* e.g. worker created with its own event fd */
        return n;
    }
    /* ucp_worker_arm returns UCS_ERR_BUSY when events are already pending:
     * then we must not sleep but return so that the caller progresses. */
    if (arm(worker) != NETSIM_UCS_OK)
        return n;
    pfd.fd = fd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    /* A bounded timeout keeps us safe from any event UCX does not signal on
     * the fd (e.g. a send that only needed socket buffer space). */
    (void)poll(&pfd, 1, cfg_poll_ms);
    return n;
}
