/* include/linux/kernel.h before v3.15: TAINT_OOT_MODULE is the last bit. */
extern enum system_states {
	SYSTEM_BOOTING,
	SYSTEM_RUNNING,
} system_state;

#define TAINT_PROPRIETARY_MODULE	0
#define TAINT_FORCED_MODULE		1
#define TAINT_WARN			9
#define TAINT_CRAP			10
#define TAINT_FIRMWARE_WORKAROUND	11
#define TAINT_OOT_MODULE		12

extern const char hex_asc[];
