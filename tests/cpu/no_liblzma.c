/* A machine without liblzma, for test_cpu_minidebug.py: preloaded, this dlopen refuses
 * liblzma.so.* as a missing library would (NULL, dlerror set by the real dlopen of an absent
 * name) and passes every other name to the real one. Exported despite the build's hidden
 * visibility. */
#include <dlfcn.h>
#include <string.h>

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
    void *(*real)(const char *, int);
    void *next = dlsym(RTLD_NEXT, "dlopen");
    memcpy(&real, &next, sizeof real);
    if (file && strstr(file, "liblzma.so"))
        return real("/nonexistent/liblzma.so.5", mode);
    return real(file, mode);
}
