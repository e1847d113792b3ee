/* The program of critest's nonewprivs image (kubernetes' e2e nonewprivs: nnp.c), installed
 * setuid root: run as another user, it prints uid 0 unless no_new_privs stopped the setuid. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
        printf("Effective uid: %d\n", (int)geteuid());
        return 0;
}
