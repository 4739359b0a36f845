/* prom_seeds.c — seed texts for fuzz_prom (fuzz_prom.h). */
#include "fuzz_prom.h"

#include <string.h>

static const struct {
    const char *text;
    int valid;
} seeds[] = {
    {"# HELP offcore_agent_info This agent\n"
     "# TYPE offcore_agent_info gauge\n"
     "offcore_agent_info{node=\"0\",version=\"0.1\"} 1\n"
     "# TYPE offcore_job_messages_total counter\n"
     "offcore_job_messages_total{job=\"7\",dir=\"in\"} 123456789\n"
     "offcore_job_messages_total{job=\"7\",dir=\"out\"} 18446744073709551615\n",
     1},
    {"# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 3\n"
     "h_sum 0.25\nh_count 3\n# TYPE s summary\ns{quantile=\"0.5\"} NaN\n"
     "s_sum -Inf\ns_count 0\n",
     1},
    {"node_load1 0.5 1700000000000\ngo_goroutines 8\n# just a comment\n\n"
     "x{a=\"q\\\"uote\\\\back\\nnl\",b=\"\xc3\xa9t\xc3\xa9\"} 1e-3",
     1},
    {"offcore_x{who=\"\x1b[31mred\x07\"} 1\n", 1},
    {"", 1},
    {"x{a=\"1\",a=\"2\"} 1\n", 0},
    {"x{a=\"\\u001b\"} 1\n", 0},
    {"1x 1\n", 0},
    {"x{a=\"\xc0\xaf\"} 1\n", 0},
    {"# TYPE x counter\n# TYPE x gauge\nx 1\n", 0},
    {"x 1 99999999999999999999\n", 0},
    {"x{a=\"unterminated} 1\n", 0},
};

unsigned fuzz_prom_seeds(fuzz_prom_seed_fn fn, void *arg)
{
    for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
        fn(arg, (const uint8_t *)seeds[i].text, strlen(seeds[i].text),
           seeds[i].valid);
    return (unsigned)(sizeof(seeds) / sizeof(seeds[0]));
}
