/* The fixture of scripts/check-layout: common includes nothing of ours. */
