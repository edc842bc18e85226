#ifndef CHAPPIE_CCURL_H
#define CHAPPIE_CCURL_H
// libcurl from Debian (libcurl4), loaded with dlopen the first time a request is made, so that a
// command that makes none (`token` with a valid stored token, `accounts list`, `--version`) does
// not load libcurl and the ~30 libraries it pulls in (Kerberos, LDAP, GnuTLS, ...) at start-up.
//
// The types come from <curl/curl.h> (libcurl4-openssl-dev, at build time only); every function is
// reached through the ccurl_ wrappers below, never by its curl_ name: the binary does not link
// libcurl, so a direct call would not link. Swift cannot call C variadic functions, so
// curl_easy_setopt and curl_easy_getinfo have typed, non-variadic wrappers.
#include <curl/curl.h>
#include <stddef.h>

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);

/// Loads the library `soname` (such as "libcurl.so.4") and every function chappie uses from it,
/// and, the first time it succeeds, makes it the one the ccurl_ wrappers call. Call before any
/// wrapper; when it fails (returns 0, with the reason in `error`), nothing changes.
int ccurl_load(const char *soname, char *error, size_t capacity);

CURLcode ccurl_global_init(long flags);
curl_version_info_data *ccurl_version_info(void);
const char *ccurl_easy_strerror(CURLcode code);

CURL *ccurl_easy_init(void);
void ccurl_easy_cleanup(CURL *handle);
CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value);
CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, const char **value);
/// Sets a blob option (such as CURLOPT_CAINFO_BLOB) to a copy of `length` bytes at `data`.
CURLcode ccurl_easy_setopt_blob(CURL *handle, CURLoption option, const void *data, size_t length);

struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *value);
void ccurl_slist_free_all(struct curl_slist *list);

CURLM *ccurl_multi_init(void);
CURLMcode ccurl_multi_cleanup(CURLM *handle);
CURLMcode ccurl_multi_add_handle(CURLM *handle, CURL *easy);
CURLMcode ccurl_multi_remove_handle(CURLM *handle, CURL *easy);
CURLMcode ccurl_multi_perform(CURLM *handle, int *running);
CURLMcode ccurl_multi_poll(CURLM *handle, struct curl_waitfd *extra, unsigned int count, int timeout, int *ready);
CURLMcode ccurl_multi_wakeup(CURLM *handle);

/// Reads the next finished transfer off a multi handle, hiding CURLMsg's union.
/// Returns 1 and fills `easy` and `result` when a transfer finished, 0 when none is left.
int ccurl_multi_next_done(CURLM *handle, CURL **easy, CURLcode *result);

#endif
