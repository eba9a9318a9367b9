/* Allowed: the proxy includes the layers below it. */
#include "http.h"
#include "tls.h"
