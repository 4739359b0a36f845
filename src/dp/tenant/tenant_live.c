/*
 * tenant_live.c — `tenant add NAME key=value...` and `tenant del NAME` on a
 * running offcore-dp, without disturbing other tenants' flows.
 *
 * Add: the line is checked like a config line (tenant_conf.c), then a free
 * slot gets the tenant, its security groups and, in every worker, fresh
 * policers and counters (no worker reads an unpublished slot), and only
 * then its attachments point at it (release stores the workers load with
 * acquire).  Del: all its attachments are closed first (they drop every
 * frame until a tenant is added on them: never forwarded unfiltered), then
 * the
 * control thread waits until every worker has finished the burst it was
 * in (its loop counter moved, or it sleeps), flushes the tenant's flows in
 * every worker and frees the slot.
 *
 * Threading: control thread only; dp->lock keeps the metrics thread off
 * the slots while they change.
 */
#include "tenant_int.h"
#include "util/clock.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* every worker past the burst it was in: 0, or -1 after 3 s */
int oc__dp_tenant_grace(oc_dp_t *dp)
{
    uint64_t seq0[OC_DP_MAX_THREADS];

    for (uint32_t q = 0; q < dp->nthreads; q++)
        seq0[q] = __atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 3000; i++) {
        uint32_t done = 0;
        for (uint32_t q = 0; q < dp->nthreads; q++)
            done += __atomic_load_n(&dp->w[q].seq, __ATOMIC_SEQ_CST) != seq0[q] ||
                    __atomic_load_n(&dp->w[q].asleep, __ATOMIC_SEQ_CST);
        if (done == dp->nthreads)
            return 0;
        usleep(1000);
    }
    return -1;
}

static int attach_of(const oc_dp_t *dp, const char *name)
{
    for (uint32_t a = 0; a < dp->nattach; a++)
        if (!strcmp(dp->att[a].name, name))
            return (int)a;
    return -1;
}

static int add(oc_dp_t *dp, char *args, FILE *out)
{
    struct oc_dp_tenants *ten = dp->ten;
    oc_dp_tenants_conf_t *tmp;
    oc_conf_errors_t err;
    char *tok[24];
    int n, a[OC_DP_TENANT_ATT];
    uint32_t slot;
    const oc_dp_tenant_conf_t *tc;

    tok[0] = "tenant";
    n = oc__kv_split(args, tok + 1, 23);
    if (n < 0) {
        fprintf(out, "error: tenant add: more than 22 words\n");
        return 1;
    }
    n++;
    tmp = calloc(1, sizeof(*tmp));
    if (tmp == NULL) {
        fprintf(out, "error: out of memory\n");
        return 1;
    }
    memset(&err, 0, sizeof(err));
    if (oc__dp_tenant_parse(tmp, tok, n, "tenant add", 0, &err) != 0) {
        size_t l = strlen(err.text);
        if (l > 0 && err.text[l - 1] == '\n')
            err.text[l - 1] = '\0';
        fprintf(out, "error: %s\n", err.text);
        free(tmp);
        return 1;
    }
    tc = &tmp->t[0];
    for (uint32_t t = 0; t < ten->n; t++)
        if (ten->live[t] && !strcmp(ten->t[t].name, tc->name)) {
            fprintf(out, "error: tenant %s exists\n", tc->name);
            goto done;
        }
    for (uint32_t i = 0; i < tc->natt; i++) {
        a[i] = attach_of(dp, tc->attach[i]);
        if (a[i] < 0 ||
            __atomic_load_n(&dp->att_tenant[a[i]], __ATOMIC_RELAXED) >= 0) {
            fprintf(out, "error: tenant %s: attachment '%s' %s\n", tc->name,
                    tc->attach[i], a[i] < 0 ? "does not exist" : "has a tenant");
            goto done;
        }
        /* a shared wire port tells its tenants apart by VNI (uplink.c) */
        for (uint32_t b = 0; b < dp->nattach; b++) {
            uint32_t own_a = dp->att[a[i]].wire_of ? dp->att[a[i]].wire_of - 1
                                                   : (uint32_t)a[i];
            uint32_t own_b = dp->att[b].wire_of ? dp->att[b].wire_of - 1 : b;
            int tb = __atomic_load_n(&dp->att_tenant[b], __ATOMIC_RELAXED);
            if (b != (uint32_t)a[i] && own_a == own_b && tb >= 0 &&
                ten->t[tb].vni == tc->vni) {
                fprintf(out, "error: tenant %s: vni %u is tenant %s's on the "
                             "same wire port\n", tc->name, tc->vni,
                        ten->t[tb].name);
                goto done;
            }
        }
    }
    for (slot = 0; slot < ten->n && ten->live[slot]; slot++)
        ;
    if (slot == OC_DP_MAX_TENANTS) {
        fprintf(out, "error: %u tenants already\n", OC_DP_MAX_TENANTS);
        goto done;
    }
    pthread_mutex_lock(&dp->lock);
    ten->t[slot] = *tc;
    for (int d = 0; d < 2; d++)
        if (ten->acl[slot][d] == NULL &&
            oc__acl_create(OC_DP_MAX_TRULES, &ten->acl[slot][d]) != OC_OK) {
            pthread_mutex_unlock(&dp->lock);
            fprintf(out, "error: out of memory\n");
            goto done;
        }
    for (uint32_t q = 0; q < dp->nthreads; q++) {
        struct oc_dp_tw *tw = dp->w[q].tw;
        memset(&tw->c[slot], 0, sizeof(tw->c[slot]));
        for (uint32_t i = 0; i < tc->natt; i++)
            for (int d = 0; d < 2; d++)
                oc__policer_init(&tw->pol[a[i]][d], tc->rate, tc->burst,
                                oc__now_ns());
    }
    for (uint32_t i = 0; i < tc->natt; i++)
        ten->att_idx[a[i]] = (uint8_t)i;
    ten->live[slot] = 1;
    if (slot == ten->n)
        ten->n++;
    pthread_mutex_unlock(&dp->lock);
    for (uint32_t i = 0; i < tc->natt; i++)
        __atomic_store_n(&dp->att_tenant[a[i]], (int)slot, __ATOMIC_RELEASE);
    oc_info(OC_COMP_DP, "tenant %s added on %u attachment(s), the first %s "
            "(vni %u)", tc->name, tc->natt, tc->attach[0], tc->vni);
    fprintf(out, "ok\nadded tenant %s on attachment", tc->name);
    for (uint32_t i = 0; i < tc->natt; i++)
        fprintf(out, "%s%s", i ? "," : " ", tc->attach[i]);
    fprintf(out, "\n");
done:
    free(tmp);
    return 1;
}

static int del(oc_dp_t *dp, const char *name, FILE *out)
{
    struct oc_dp_tenants *ten = dp->ten;
    uint32_t t;
    char names[OC_DP_TENANT_ATT * 33] = "-";
    size_t used = 0;

    for (t = 0; t < ten->n; t++)
        if (ten->live[t] && !strcmp(ten->t[t].name, name))
            break;
    if (t == ten->n) {
        fprintf(out, "error: no tenant '%.64s'\n", name);
        return 1;
    }
    /* every attachment of the tenant closes */
    for (uint32_t i = 0; i < dp->nattach; i++)
        if (__atomic_load_n(&dp->att_tenant[i], __ATOMIC_RELAXED) == (int)t) {
            __atomic_store_n(&dp->att_tenant[i], -2, __ATOMIC_RELEASE);
            if (used < sizeof(names) - 33)
                used += (size_t)snprintf(names + used, sizeof(names) - used,
                                         "%s%s", used ? "," : "",
                                         dp->att[i].name);
        }
    if (oc__dp_tenant_grace(dp) != 0 || oc__dp_tenant_ask_all(dp, 1, (int)t) != 0) {
        /* a worker is stuck: keep the slot (its flows may still be used) */
        fprintf(out, "error: a worker did not answer; attachment closed, "
                     "tenant %s kept\n", name);
        return 1;
    }
    pthread_mutex_lock(&dp->lock);
    ten->live[t] = 0;
    for (int d = 0; d < 2; d++) {
        oc__acl_destroy(ten->acl[t][d]);
        ten->acl[t][d] = NULL;
        free(ten->g6[t][d]); /* after the grace period above */
        ten->g6[t][d] = NULL;
    }
    pthread_mutex_unlock(&dp->lock);
    oc_info(OC_COMP_DP, "tenant %s deleted; attachment(s) %s closed", name,
            names);
    fprintf(out, "ok\ndeleted tenant %s; attachment(s) %s drop every frame "
                 "until a tenant is added on them\n", name, names);
    return 1;
}

int oc__dp_tenant_live_ctl(oc_dp_t *dp, const char *line, FILE *out)
{
    char buf[OC_DP_LINE_MAX];

    snprintf(buf, sizeof(buf), "%s", line + 11);
    if (!strncmp(line, "tenant add ", 11))
        return add(dp, buf, out);
    return del(dp, buf, out);
}
