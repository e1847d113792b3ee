#include "workpool.h"

#include <signal.h>

#include "alloc.h"
#include "banned.h"

typedef struct job {
        struct job *next;
        rkl_work_fn fn;
        void *userdata;
} job;

struct rkl_workpool {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        job *head, *tail;
        size_t pending; /* queued + running */
        bool quit;
        pthread_t *threads;
        unsigned n;
};

static void *worker(void *userdata)
{
        rkl_workpool *p = userdata;
        for (;;) {
                pthread_mutex_lock(&p->lock);
                while (!p->head && !p->quit)
                        pthread_cond_wait(&p->cond, &p->lock);
                job *j = p->head;
                if (!j) {
                        pthread_mutex_unlock(&p->lock);
                        return NULL; /* quit, and the queue is empty */
                }
                p->head = j->next;
                if (!p->head)
                        p->tail = NULL;
                pthread_mutex_unlock(&p->lock);

                j->fn(j->userdata);
                free(j);

                pthread_mutex_lock(&p->lock);
                p->pending--;
                pthread_mutex_unlock(&p->lock);
        }
}

rkl_workpool *rkl_workpool_new(unsigned n, const char *name)
{
        rkl_workpool *p = rkl_xnew0(rkl_workpool, 1);
        sigset_t all, old;

        assert(n >= 1);
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        p->threads = rkl_xnew0(pthread_t, n);
        /* Workers never take signals: the main thread does. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        for (unsigned i = 0; i < n; i++) {
                int r = pthread_create(&p->threads[i], NULL, worker, p);
                if (r != 0)
                        rkl_oom(); /* EAGAIN: out of threads, as fatal as out of memory */
                char tname[16];
                (void)snprintf(tname, sizeof(tname), "%.8s-%u", name ? name : "work", i % 1000);
                (void)pthread_setname_np(p->threads[i], tname);
                p->n++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return p;
}

static void submit_locked(rkl_workpool *p, job *j)
{
        if (p->tail)
                p->tail->next = j;
        else
                p->head = j;
        p->tail = j;
        p->pending++;
        pthread_cond_signal(&p->cond);
}

void rkl_workpool_submit(rkl_workpool *p, rkl_work_fn fn, void *userdata)
{
        job *j = rkl_xnew0(job, 1);
        j->fn = fn;
        j->userdata = userdata;
        RKL_GUARD(&p->lock);
        submit_locked(p, j);
}

int rkl_workpool_submit_bounded(rkl_workpool *p, size_t max_pending, rkl_work_fn fn, void *userdata)
{
        job *j = rkl_xnew0(job, 1);
        j->fn = fn;
        j->userdata = userdata;
        RKL_GUARD(&p->lock);
        if (p->pending >= max_pending) {
                free(j);
                return -EBUSY;
        }
        submit_locked(p, j);
        return 0;
}

size_t rkl_workpool_pending(rkl_workpool *p)
{
        RKL_GUARD(&p->lock);
        return p->pending;
}

rkl_workpool *rkl_workpool_free(rkl_workpool *p)
{
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->quit = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (unsigned i = 0; i < p->n; i++)
                pthread_join(p->threads[i], NULL);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        free(p->threads);
        free(p);
        return NULL;
}
