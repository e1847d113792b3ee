/* Included last in every .c: libc calls that are too easy to misuse (git's banned.h). */
#pragma once

#define RKL_BANNED(func) sorry_##func##_is_a_banned_function

#undef sprintf
#define sprintf(...) RKL_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) RKL_BANNED(vsprintf)
#undef strcpy
#define strcpy(x, y) RKL_BANNED(strcpy)
#undef strcat
#define strcat(x, y) RKL_BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) RKL_BANNED(strncpy)
#undef strtok
#define strtok(x, y) RKL_BANNED(strtok)
#undef atoi
#define atoi(x) RKL_BANNED(atoi)
#undef atol
#define atol(x) RKL_BANNED(atol)
#undef system
#define system(x) RKL_BANNED(system)
#undef popen
#define popen(x, y) RKL_BANNED(popen)
#undef fork
#define fork() RKL_BANNED(fork)
#undef dup
#define dup(x) RKL_BANNED(dup)
#undef basename
#define basename(x) RKL_BANNED(basename)
#undef dirname
#define dirname(x) RKL_BANNED(dirname)
#undef inotify_init
#define inotify_init() RKL_BANNED(inotify_init)
#undef localtime
#define localtime(x) RKL_BANNED(localtime)
#undef gmtime
#define gmtime(x) RKL_BANNED(gmtime)
