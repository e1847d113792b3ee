/* A stand-in for nginx in critest's nginx images, on Debian's busybox-static: critest looks
 * for a process named nginx (pidof), for "master process" in its command line and for its
 * PID in /var/run/nginx.pid, and fetches a page from it. This master process serves with
 * busybox httpd as its one worker, on $NGINX_PORT (default 80), from /usr/share/nginx/html.
 * It re-executes itself once so that its command line is the title nginx gives itself. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define TITLE "nginx: master process nginx -g daemon off;"

static volatile sig_atomic_t worker;

static void forward(int sig)
{
        if (worker > 0)
                kill(worker, sig);
}

int main(int argc, char **argv)
{
        const char *port = getenv("NGINX_PORT");
        FILE *f;
        int status;
        pid_t pid;

        (void)argc;
        if (strcmp(argv[0], TITLE) != 0) {
                char *args[] = {TITLE, NULL};
                execv("/proc/self/exe", args);
                perror("nginx: re-exec");
                return 1;
        }
        prctl(PR_SET_NAME, "nginx");
        if (!port || !*port)
                port = "80";

        signal(SIGTERM, forward);
        signal(SIGINT, forward);
        signal(SIGQUIT, forward);
        pid = fork();
        if (pid < 0) {
                perror("nginx: fork");
                return 1;
        }
        if (pid == 0) {
                execl("/bin/busybox", "httpd", "-f", "-p", port, "-h", "/usr/share/nginx/html",
                      (char *)NULL);
                perror("nginx: exec httpd");
                _exit(127);
        }
        worker = pid;
        f = fopen("/var/run/nginx.pid", "we");
        if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return 1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
