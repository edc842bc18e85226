#ifndef CHAPPIE_CCURL_SHIM_H
#define CHAPPIE_CCURL_SHIM_H
// libcurl from Debian (libcurl4-openssl-dev).
//
// Swift cannot call C variadic functions, so curl_easy_setopt, curl_easy_getinfo and
// curl_multi_setopt are reached through the typed, non-variadic wrappers below. Each one
// is a single call of the variadic function with an argument of the type curl expects.
#include <curl/curl.h>

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode ccurl_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/// The version facts of the libcurl this process runs with (CURLVERSION_NOW is a macro Swift cannot see).
static inline curl_version_info_data *ccurl_version_info(void) {
    return curl_version_info(CURLVERSION_NOW);
}

/// Reads the next finished transfer off a multi handle, hiding CURLMsg's union.
/// Returns 1 and fills `easy` and `result` when a transfer finished, 0 when none is left.
static inline int ccurl_multi_next_done(CURLM *handle, CURL **easy, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl_multi_info_read(handle, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

#endif
