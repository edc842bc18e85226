#include "ccurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// The functions chappie calls, as loaded from libcurl. Written once by ccurl_load, before any
// wrapper runs (the Swift side calls it inside a one-time initialiser), and only read afterwards.
static struct {
    CURLcode (*global_init)(long);
    curl_version_info_data *(*version_info)(CURLversion);
    const char *(*easy_strerror)(CURLcode);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
} curl;

// Whether the table above is filled, under `filling`: only the first successful load fills it,
// so that a later call cannot rewrite what other threads are reading, and none returns before
// the table is complete.
static int filled;
static pthread_mutex_t filling = PTHREAD_MUTEX_INITIALIZER;

int ccurl_load(const char *soname, char *error, size_t capacity) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(error, capacity, "%s", reason ? reason : "cannot be opened");
        return 0;
    }
    void *symbols[17];
    static const char *const names[17] = {
        "curl_global_init",
        "curl_version_info",
        "curl_easy_strerror",
        "curl_easy_init",
        "curl_easy_cleanup",
        "curl_easy_setopt",
        "curl_easy_getinfo",
        "curl_slist_append",
        "curl_slist_free_all",
        "curl_multi_init",
        "curl_multi_cleanup",
        "curl_multi_add_handle",
        "curl_multi_remove_handle",
        "curl_multi_perform",
        "curl_multi_poll",
        "curl_multi_wakeup",
        "curl_multi_info_read",
    };
    for (int index = 0; index < 17; index++) {
        symbols[index] = dlsym(library, names[index]);
        if (symbols[index] == NULL) {
            snprintf(error, capacity, "%s has no %s (libcurl 7.85 or later is needed)", soname, names[index]);
            dlclose(library);
            return 0;
        }
    }
    pthread_mutex_lock(&filling);
    if (filled) {
        pthread_mutex_unlock(&filling);
        dlclose(library);
        return 1;
    }
    // POSIX allows converting dlsym's object pointer to a function pointer; memcpy says so without a cast warning.
    memcpy(&curl.global_init, &symbols[0], sizeof(void *));
    memcpy(&curl.version_info, &symbols[1], sizeof(void *));
    memcpy(&curl.easy_strerror, &symbols[2], sizeof(void *));
    memcpy(&curl.easy_init, &symbols[3], sizeof(void *));
    memcpy(&curl.easy_cleanup, &symbols[4], sizeof(void *));
    memcpy(&curl.easy_setopt, &symbols[5], sizeof(void *));
    memcpy(&curl.easy_getinfo, &symbols[6], sizeof(void *));
    memcpy(&curl.slist_append, &symbols[7], sizeof(void *));
    memcpy(&curl.slist_free_all, &symbols[8], sizeof(void *));
    memcpy(&curl.multi_init, &symbols[9], sizeof(void *));
    memcpy(&curl.multi_cleanup, &symbols[10], sizeof(void *));
    memcpy(&curl.multi_add_handle, &symbols[11], sizeof(void *));
    memcpy(&curl.multi_remove_handle, &symbols[12], sizeof(void *));
    memcpy(&curl.multi_perform, &symbols[13], sizeof(void *));
    memcpy(&curl.multi_poll, &symbols[14], sizeof(void *));
    memcpy(&curl.multi_wakeup, &symbols[15], sizeof(void *));
    memcpy(&curl.multi_info_read, &symbols[16], sizeof(void *));
    filled = 1;
    pthread_mutex_unlock(&filling);
    return 1;
}

CURLcode ccurl_global_init(long flags) { return curl.global_init(flags); }
curl_version_info_data *ccurl_version_info(void) { return curl.version_info(CURLVERSION_NOW); }
const char *ccurl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }

CURL *ccurl_easy_init(void) { return curl.easy_init(); }
void ccurl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }

CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl.easy_setopt(handle, option, value);
}
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl.easy_getinfo(handle, info, value);
}
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl.easy_getinfo(handle, info, value);
}
CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length) {
    struct curl_blob blob = {(void *)data, length, CURL_BLOB_COPY};
    return curl.easy_setopt(handle, option, &blob);
}

struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *value) { return curl.slist_append(list, value); }
void ccurl_slist_free_all(struct curl_slist *list) { curl.slist_free_all(list); }

CURLM *ccurl_multi_init(void) { return curl.multi_init(); }
CURLMcode ccurl_multi_cleanup(CURLM *handle) { return curl.multi_cleanup(handle); }
CURLMcode ccurl_multi_add_handle(CURLM *handle, CURL *easy) { return curl.multi_add_handle(handle, easy); }
CURLMcode ccurl_multi_remove_handle(CURLM *handle, CURL *easy) { return curl.multi_remove_handle(handle, easy); }
CURLMcode ccurl_multi_perform(CURLM *handle, int *running) { return curl.multi_perform(handle, running); }
CURLMcode ccurl_multi_poll(CURLM *handle, struct curl_waitfd *extra, unsigned int count, int timeout, int *ready) {
    return curl.multi_poll(handle, extra, count, timeout, ready);
}
CURLMcode ccurl_multi_wakeup(CURLM *handle) { return curl.multi_wakeup(handle); }

int ccurl_multi_next_done(CURLM *handle, CURL **easy, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl.multi_info_read(handle, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}
