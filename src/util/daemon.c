/*
 * daemon.c — the start-up every offcore daemon shares (daemon.h).
 */
#include "util/daemon.h"

#include <signal.h>
#include <string.h>

void oc__daemon_signals(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    (void)sigaction(SIGHUP, &sa, NULL);
    (void)sigaction(SIGPIPE, &sa, NULL);
}
