/*
 * Privilege handling: who the payload and egressd run as, and the drop
 * itself. The order matters: the bounding and ambient sets can only be
 * cleared while CAP_SETPCAP is still held, groups only changed while the
 * uid is still 0, and the uid goes last, since after it nothing else may
 * change. Capabilities are set with the raw capget/capset system calls
 * (no libcap), and everything is checked afterwards rather than trusted.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <linux/capability.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init.h"

#define PRIV_MAX_GROUPS 64

/* A user by name or number; a number need not be in the password file. */
const char *
priv_user_lookup(const char *spec, struct priv_user *u)
{
	struct passwd *pw;
	char *end;
	unsigned long v;

	memset(u, 0, sizeof *u);
	if (spec == NULL || *spec == '\0')
		return "empty user";
	errno = 0;
	v = strtoul(spec, &end, 10);
	/* "UID:GID": both numbers, for a payload that must own the host user's files. */
	if (*end == ':' && spec[0] >= '0' && spec[0] <= '9') {
		unsigned long g;
		char *gend;

		if (errno != 0 || v >= (unsigned long)UINT_MAX)
			return "uid out of range";
		errno = 0;
		g = strtoul(end + 1, &gend, 10);
		if (end[1] < '0' || end[1] > '9' || *gend != '\0' || errno != 0 ||
		    g >= (unsigned long)UINT_MAX)
			return "expected UID:GID";
		u->uid = (uid_t)v;
		u->gid = (gid_t)g;
		snprintf(u->home, sizeof u->home, "/");
		if ((pw = getpwuid(u->uid)) != NULL) {
			snprintf(u->name, sizeof u->name, "%s", pw->pw_name);
			snprintf(u->home, sizeof u->home, "%s", pw->pw_dir);
		}
		return NULL;
	}
	if (*end == '\0' && spec[0] >= '0' && spec[0] <= '9') {
		if (errno != 0 || v >= (unsigned long)UINT_MAX)
			return "uid out of range";
		u->uid = (uid_t)v;
		u->gid = (gid_t)v;
		snprintf(u->home, sizeof u->home, "/");
		if ((pw = getpwuid(u->uid)) != NULL) {
			u->gid = pw->pw_gid;
			snprintf(u->name, sizeof u->name, "%s", pw->pw_name);
			snprintf(u->home, sizeof u->home, "%s", pw->pw_dir);
		}
		return NULL;
	}
	if ((pw = getpwnam(spec)) == NULL)
		return "no such user";
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	snprintf(u->name, sizeof u->name, "%s", pw->pw_name);
	snprintf(u->home, sizeof u->home, "%s", pw->pw_dir);
	return NULL;
}

static int
priv_last_cap(void)
{
	int c;

	/* The kernel knows its own last capability; ask it. */
	for (c = 0; c < 64; c++)
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0)
			break;
	return c - 1;
}

static int
priv_capset(uint64_t eff, uint64_t perm, uint64_t inh)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	d[0].effective = (uint32_t)eff;
	d[1].effective = (uint32_t)(eff >> 32);
	d[0].permitted = (uint32_t)perm;
	d[1].permitted = (uint32_t)(perm >> 32);
	d[0].inheritable = (uint32_t)inh;
	d[1].inheritable = (uint32_t)(inh >> 32);
	return (int)syscall(SYS_capset, &h, d);
}

static int
priv_capget(uint64_t *eff, uint64_t *perm, uint64_t *inh)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) == -1)
		return -1;
	*eff = d[0].effective | (uint64_t)d[1].effective << 32;
	*perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	*inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

/* Is the capability in this process's effective set? */
int
priv_has_cap(int cap)
{
	uint64_t eff, perm, inh;

	if (cap < 0 || cap > 63 || priv_capget(&eff, &perm, &inh) == -1)
		return 0;
	return (eff >> cap) & 1;
}

/* Bounding set down to keep (a bit mask); the ambient set emptied. */
static int
priv_bound(uint64_t keep, char *err, size_t errlen)
{
	int c, last = priv_last_cap();

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 && errno != EINVAL) {
		snprintf(err, errlen, "clearing the ambient capabilities: %s", strerror(errno));
		return -1;
	}
	for (c = 0; c <= last; c++) {
		if (c < 64 && ((keep >> c) & 1))
			continue;
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1) {
			snprintf(err, errlen,
			         "dropping capability %d from the bounding set: %s (sandbox-init "
			         "needs CAP_SETPCAP to start its children without capabilities)",
			         c, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * Becomes u for good: setgroups, setresgid, setresuid, in that order, with
 * every capability set empty and no_new_privs, so no set-uid program or
 * file capability can give anything back.
 */
int
priv_drop(const struct priv_user *u, char *err, size_t errlen)
{
	gid_t groups[PRIV_MAX_GROUPS];
	int ngroups = PRIV_MAX_GROUPS;

	if (priv_bound(0, err, errlen) == -1)
		return -1;
	if (u->name[0] == '\0' || getgrouplist(u->name, u->gid, groups, &ngroups) == -1) {
		groups[0] = u->gid;
		ngroups = 1;
	}
	if (setgroups((size_t)ngroups, groups) == -1) {
		snprintf(err, errlen, "setgroups: %s", strerror(errno));
		return -1;
	}
	if (setresgid(u->gid, u->gid, u->gid) == -1) {
		snprintf(err, errlen, "setresgid %u: %s", (unsigned)u->gid, strerror(errno));
		return -1;
	}
	if (setresuid(u->uid, u->uid, u->uid) == -1) {
		snprintf(err, errlen, "setresuid %u: %s", (unsigned)u->uid, strerror(errno));
		return -1;
	}
	if (priv_capset(0, 0, 0) == -1) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		snprintf(err, errlen, "no_new_privs: %s", strerror(errno));
		return -1;
	}
	return priv_check_dropped(u, err, errlen);
}

/* Proves the drop: ids, every capability set, no_new_privs, no way back. */
int
priv_check_dropped(const struct priv_user *u, char *err, size_t errlen)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	uint64_t eff, perm, inh;
	int c, last = priv_last_cap();

	if (getresuid(&ru, &eu, &su) == -1 || ru != u->uid || eu != u->uid || su != u->uid ||
	    getresgid(&rg, &eg, &sg) == -1 || rg != u->gid || eg != u->gid || sg != u->gid) {
		snprintf(err, errlen, "user or group ids did not change");
		return -1;
	}
	if (priv_capget(&eff, &perm, &inh) == -1 || eff != 0 || perm != 0 || inh != 0) {
		snprintf(err, errlen, "capabilities remain after the drop");
		return -1;
	}
	for (c = 0; c <= last; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1) {
			snprintf(err, errlen, "capability %d remains in the bounding set", c);
			return -1;
		}
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) {
			snprintf(err, errlen, "capability %d remains in the ambient set", c);
			return -1;
		}
	}
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) {
		snprintf(err, errlen, "no_new_privs is not set");
		return -1;
	}
	if (u->uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) {
		snprintf(err, errlen, "the process could become root again");
		return -1;
	}
	return 0;
}

/*
 * For sandbox-init itself once its children run: of all its capabilities
 * it keeps CAP_KILL alone, to forward signals to the payload and stop it.
 */
int
priv_keep_only_kill(char *err, size_t errlen)
{
	return priv_keep_only((uint64_t)1 << CAP_KILL, err, errlen);
}

/* Keep only the capabilities in keep (effective and permitted; bounding too). */
int
priv_keep_only(uint64_t kill, char *err, size_t errlen)
{
	uint64_t eff, perm, inh;

	if (priv_capget(&eff, &perm, &inh) == -1) {
		snprintf(err, errlen, "capget: %s", strerror(errno));
		return -1;
	}
	if ((perm & ((uint64_t)1 << CAP_SETPCAP)) && priv_bound(kill, err, errlen) == -1)
		return -1;
	if (priv_capset(eff & kill, perm & kill, 0) == -1) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	return 0;
}
