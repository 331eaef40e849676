/* An NVTX program that reports itself the way NCCL (2.19 and later) does, through the real
 * NVTX payload-extension headers: static payload schemas and a reduction-op enumeration
 * registered in the domain "NCCL", collective ranges whose pushes carry extended payloads
 * (message size, op, communicator), a communicator range whose payload comes with its pop
 * (nvtxRangePopPayload, as NCCL 2.24+ ends ncclCommInitRank), a group, and the odd cases:
 * a schema laid out by natural alignment, a payload of an unknown schema, a predefined type,
 * a payload too long to keep whole, a mark, and the extension's own push. The values are
 * fixed, so tests/e2e_nvtx/test_nvtx_payloads.py checks them exactly. With argv[1] "fork",
 * it registers, then forks a child whose one all-reduce needs the schemas in its own file. */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "workload: %s:%d: %s\n", __FILE__, __LINE__, #cond);                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define SID(n) (NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + (n))
enum { SID_COMM = 0, SID_ALLGATHER = 4, SID_ALLREDUCE = 5, SID_BROADCAST = 6, SID_LEGACY = 20 };
#define SID_REDOP SID(14)
#define SID_UNKNOWN SID(99)
#define COMM_ID 0x1234abcd5678ef01ull

struct comm_params {
    uint64_t comm;
    int nranks, rank, device;
};
struct allreduce_params {
    uint64_t comm;
    size_t bytes;
    int op; /* ncclRedOp_t */
};
struct allgather_params {
    uint64_t comm;
    size_t bytes;
};
/* laid out by natural alignment: the entries give no offsets */
struct legacy_params {
    uint8_t flag;
    uint32_t count;
    double ratio;
    char tag[8];
};

static nvtxDomainHandle_t nccl;
/* NVTX's return values are checked only under a tool: without one they are NVTX's no-ops'. */
static int traced;
#define CHECK_TRACED(cond) CHECK(!traced || (cond))

#define SCHEMA_MASK                                                                                \
    (NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE |                   \
     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES |          \
     NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID)

static void register_schema(const char *name, const nvtxPayloadSchemaEntry_t *entries, size_t n,
                            size_t size, uint64_t id)
{
    nvtxPayloadSchemaAttr_t attr = {.fieldMask = SCHEMA_MASK,
                                    .name = name,
                                    .type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC,
                                    .entries = entries,
                                    .numEntries = n,
                                    .payloadStaticSize = size,
                                    .schemaId = id};
    CHECK_TRACED(nvtxPayloadSchemaRegister(nccl, &attr) == id);
}

static void register_all(void)
{
    static const nvtxPayloadEnum_t ops[] = {
        {"Sum", 0, 0}, {"Product", 1, 0}, {"Max", 2, 0}, {"Min", 3, 0}, {"Avg", 4, 0}};
    nvtxPayloadEnumAttr_t enum_attr = {
        .fieldMask = NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES | NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES |
                     NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE | NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID,
        .entries = ops,
        .numEntries = 5,
        .sizeOfEnum = sizeof(int),
        .schemaId = SID_REDOP};
    CHECK_TRACED(nvtxPayloadEnumRegister(nccl, &enum_attr) == SID_REDOP);

    static const nvtxPayloadSchemaEntry_t comm[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0,
         offsetof(struct comm_params, comm), NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "No. of ranks", NULL, 0,
         offsetof(struct comm_params, nranks), NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "Rank", NULL, 0, offsetof(struct comm_params, rank), NULL,
         NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_INT, "CUDA device", NULL, 0,
         offsetof(struct comm_params, device), NULL, NULL},
    };
    register_schema("CommInitRank", comm, 4, sizeof(struct comm_params), SID(SID_COMM));
    static const nvtxPayloadSchemaEntry_t allreduce[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, 0, NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
         offsetof(struct allreduce_params, bytes), NULL, NULL},
        {0, SID_REDOP, "Reduction operation", NULL, 0, offsetof(struct allreduce_params, op), NULL,
         NULL},
    };
    register_schema("AllReduce", allreduce, 3, sizeof(struct allreduce_params), SID(SID_ALLREDUCE));
    static const nvtxPayloadSchemaEntry_t allgather[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", NULL, 0, 0, NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", NULL, 0,
         offsetof(struct allgather_params, bytes), NULL, NULL},
    };
    register_schema("AllGather", allgather, 2, sizeof(struct allgather_params), SID(SID_ALLGATHER));
    static const nvtxPayloadSchemaEntry_t legacy[] = {
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT8, "flag", NULL, 0, 0, NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "count", NULL, 0, 0, NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE, "ratio", "a described entry", 0, 0, NULL, NULL},
        {0, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "tag", NULL, 8, 0, NULL, NULL},
    };
    register_schema("Legacy", legacy, 4, 0, SID(SID_LEGACY));
}

/* A range of the domain NCCL named by a registered string, with one payload on its push. */
static void push_with(const char *api, uint64_t schema, const void *payload, size_t size)
{
    nvtxPayloadData_t data[] = {{schema, size, payload}};
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(nccl, api);
    a.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    a.reserved0 = 1;
    a.payload.ullValue = (uint64_t)(uintptr_t)data;
    CHECK_TRACED(nvtxDomainRangePushEx(nccl, &a) >= 0);
}

static void plain_push(const char *api)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = nvtxDomainRegisterStringA(nccl, api);
    CHECK_TRACED(nvtxDomainRangePushEx(nccl, &a) >= 0);
}

static void allreduce(size_t bytes, int op)
{
    struct allreduce_params p = {COMM_ID, bytes, op};
    push_with("ncclAllReduce", SID(SID_ALLREDUCE), &p, sizeof p);
    nvtxDomainRangePop(nccl);
}

int main(int argc, char **argv)
{
    traced = getenv("NVTX_INJECTION64_PATH") != NULL;
    nccl = nvtxDomainCreateA("NCCL");
    register_all();
    if (argc > 1 && strcmp(argv[1], "fork") == 0) {
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            allreduce(2048, 1);
            exit(0);
        }
        int status;
        CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && !WEXITSTATUS(status));
        return 0;
    }

    /* ncclCommInitRank as NCCL 2.24+ emits it: the payload comes with the pop */
    plain_push("ncclCommInitRank");
    struct comm_params comm = {COMM_ID, 4, 1, 0};
    nvtxPayloadData_t comm_data = {SID(SID_COMM), sizeof comm, &comm};
    CHECK_TRACED(nvtxRangePopPayload(nccl, &comm_data, 1) == 0);

    allreduce(1024, 0);
    allreduce(1024, 0);
    allreduce(1048576, 2);
    struct allgather_params ag = {COMM_ID, 4096};
    push_with("ncclAllGather", SID(SID_ALLGATHER), &ag, sizeof ag);
    nvtxDomainRangePop(nccl);

    /* a group: the calls' ranges inside ncclGroupStart/ncclGroupEnd */
    plain_push("ncclGroupStart");
    nvtxDomainRangePop(nccl);
    allreduce(256, 4);
    allreduce(512, 4);
    plain_push("ncclGroupEnd");
    nvtxDomainRangePop(nccl);

    struct legacy_params legacy = {7, 123456, 0.25, "ring"};
    push_with("legacy", SID(SID_LEGACY), &legacy, sizeof legacy);
    nvtxDomainRangePop(nccl);

    uint64_t unknown = 42;
    push_with("unknown", SID_UNKNOWN, &unknown, sizeof unknown);
    nvtxDomainRangePop(nccl);

    uint32_t predefined = 77;
    push_with("predefined", NVTX_PAYLOAD_ENTRY_TYPE_UINT32, &predefined, sizeof predefined);
    nvtxDomainRangePop(nccl);

    static uint8_t big[300];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)i;
    push_with("big", NVTX_TYPE_PAYLOAD_SCHEMA_RAW, big, sizeof big);
    nvtxDomainRangePop(nccl);

    /* a mark with a payload, and the extension's own push/pop (no message) */
    nvtxPayloadData_t mark_data[] = {{SID(SID_ALLGATHER), sizeof ag, &ag}};
    nvtxEventAttributes_t m = {0};
    m.version = NVTX_VERSION;
    m.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    m.messageType = NVTX_MESSAGE_TYPE_ASCII;
    m.message.ascii = "marked";
    m.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    m.reserved0 = 1;
    m.payload.ullValue = (uint64_t)(uintptr_t)mark_data;
    nvtxDomainMarkEx(nccl, &m);
    struct allreduce_params ext = {COMM_ID, 64, 3};
    nvtxPayloadData_t ext_data = {SID(SID_ALLREDUCE), sizeof ext, &ext};
    CHECK_TRACED(nvtxRangePushPayload(nccl, &ext_data, 1) == 0);
    CHECK_TRACED(nvtxRangePopPayload(nccl, NULL, 0) == 0);
    return 0;
}
