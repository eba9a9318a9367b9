/* Allowed: a file of the proxy includes its header. */
#include "proxy.h"
