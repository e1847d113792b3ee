/* The node e2e suite's pause image (registry.k8s.io/pause): a process that does nothing
 * until SIGINT or SIGTERM, then exits 0, reaping any child it inherits meanwhile. Built
 * static by tests/lib/push-node-images; the image has no libc. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig)
{
        (void)sig;
        _exit(0);
}

static void on_child(int sig)
{
        (void)sig;
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

int main(int argc, char **argv)
{
        struct sigaction stop = {.sa_handler = on_stop};
        struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};

        if (argc > 1 && strcmp(argv[1], "-v") == 0) {
                static const char v[] = "pause (rktlet's tests) 3.10.1\n";
                return write(STDOUT_FILENO, v, sizeof(v) - 1) < 0;
        }
        if (sigaction(SIGINT, &stop, NULL) < 0 || sigaction(SIGTERM, &stop, NULL) < 0 ||
            sigaction(SIGCHLD, &child, NULL) < 0)
                return 1;
        for (;;)
                pause();
}
