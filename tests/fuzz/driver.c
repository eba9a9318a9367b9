/*
 * Replays files (or every file of the directories given) through a fuzz
 * target's LLVMFuzzerTestOneInput, for builds without libFuzzer. This keeps
 * the harnesses compiling and their seed corpora passing in every test run.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
run_file(const char *path)
{
	FILE *f;
	uint8_t *data;
	long len;

	if ((f = fopen(path, "rb")) == NULL) {
		perror(path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(len > 0 ? (size_t)len : 1);
	if (data == NULL || fread(data, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(data);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, (size_t)len);
	free(data);
	return 0;
}

int
main(int argc, char **argv)
{
	struct dirent *de;
	struct stat st;
	char path[4096];
	DIR *d;
	int i, n = 0;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == -1) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) == -1)
				return 1;
			n++;
			continue;
		}
		if ((d = opendir(argv[i])) == NULL) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
			if (run_file(path) == -1) {
				closedir(d);
				return 1;
			}
			n++;
		}
		closedir(d);
	}
	printf("%d inputs replayed\n", n);
	return n > 0 ? 0 : 1;
}
