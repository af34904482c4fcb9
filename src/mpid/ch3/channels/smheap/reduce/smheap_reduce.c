/*
 * ch3:smheap -- reduction kernels the processor's vector unit runs (see smheap_reduce.h).
 */

#include "smheap_reduce.h"
#include "mpir_op_util.h"

MPIR_op_function *smheap_reduce_kernels[MPIR_OP_N_BUILTIN][MPIR_DATATYPE_N_BUILTIN];

/* GCC builds a clone of each kernel per target below and picks one when libmpi loads;
 * -O3's cost model lets the loops vectorize, which -O2's does not for a loop whose length
 * is unknown. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(SMHEAP_NO_TARGET_CLONES)
#define SMHEAP_VECTORIZED \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define SMHEAP_VECTORIZED
#endif

/* The C types the kernels are compiled for: MPI datatypes are mapped to them by size,
 * signedness and whether they are floating. */
enum element {
    ELEMENT_NONE, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64, N_ELEMENTS
};

/* Each operation as MPICH's files define it (a is the inout element). */
#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define BAND(a, b) ((a) & (b))
#define BOR(a, b) ((a) | (b))
#define BXOR(a, b) ((a) ^ (b))

#define KERNEL(op_, c_type_, name_)                                                    \
    SMHEAP_VECTORIZED static void name_(void *invec, void *inoutvec, MPI_Aint * len,   \
                                        MPI_Datatype * type)                           \
    {                                                                                  \
        const c_type_ *restrict b = invec;                                             \
        c_type_ *restrict a = inoutvec;                                                \
        MPI_Aint n = *len;                                                             \
                                                                                       \
        (void) type;                                                                   \
        for (MPI_Aint i = 0; i < n; i++)                                               \
            a[i] = op_(a[i], b[i]);                                                    \
    }

#define ARITHMETIC_KERNELS(c_type_, suffix_)                                           \
    KERNEL(SUM, c_type_, sum_##suffix_)                                                \
    KERNEL(PROD, c_type_, prod_##suffix_)                                              \
    KERNEL(MPL_MIN, c_type_, min_##suffix_)                                            \
    KERNEL(MPL_MAX, c_type_, max_##suffix_)

#define INTEGER_KERNELS(c_type_, suffix_)                                              \
    ARITHMETIC_KERNELS(c_type_, suffix_)                                               \
    KERNEL(BAND, c_type_, band_##suffix_)                                              \
    KERNEL(BOR, c_type_, bor_##suffix_)                                                \
    KERNEL(BXOR, c_type_, bxor_##suffix_)

/* *INDENT-OFF* */
INTEGER_KERNELS(int8_t, i8)
INTEGER_KERNELS(int16_t, i16)
INTEGER_KERNELS(int32_t, i32)
INTEGER_KERNELS(int64_t, i64)
INTEGER_KERNELS(uint8_t, u8)
INTEGER_KERNELS(uint16_t, u16)
INTEGER_KERNELS(uint32_t, u32)
INTEGER_KERNELS(uint64_t, u64)
ARITHMETIC_KERNELS(float, f32)
ARITHMETIC_KERNELS(double, f64)
/* *INDENT-ON* */

#define INTEGER_ROW(suffix_) \
    { sum_##suffix_, prod_##suffix_, min_##suffix_, max_##suffix_, \
      band_##suffix_, bor_##suffix_, bxor_##suffix_ }
#define FLOATING_ROW(suffix_) \
    { sum_##suffix_, prod_##suffix_, min_##suffix_, max_##suffix_, NULL, NULL, NULL }

static const MPI_Op kernel_ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR,
    MPI_BXOR
};

#define N_KERNEL_OPS (sizeof(kernel_ops) / sizeof(kernel_ops[0]))

static MPIR_op_function *const kernel_table[N_ELEMENTS][N_KERNEL_OPS] = {
    [I8] = INTEGER_ROW(i8),[I16] = INTEGER_ROW(i16),
    [I32] = INTEGER_ROW(i32),[I64] = INTEGER_ROW(i64),
    [U8] = INTEGER_ROW(u8),[U16] = INTEGER_ROW(u16),
    [U32] = INTEGER_ROW(u32),[U64] = INTEGER_ROW(u64),
    [F32] = FLOATING_ROW(f32),[F64] = FLOATING_ROW(f64),
};

static enum element element_of(size_t size, int floating, int is_signed)
{
    if (floating)
        return size == sizeof(float) ? F32 : size == sizeof(double) ? F64 : ELEMENT_NONE;
    switch (size) {
        case 1:
            return is_signed ? I8 : U8;
        case 2:
            return is_signed ? I16 : U16;
        case 4:
            return is_signed ? I32 : U32;
        case 8:
            return is_signed ? I64 : U64;
        default:
            return ELEMENT_NONE;
    }
}

/* Give datatype the kernels of its element for the operations MPICH allows on it. */
static void add_datatype(MPI_Datatype datatype, enum element element)
{
    if (datatype == MPI_DATATYPE_NULL || !HANDLE_IS_BUILTIN(datatype) ||
        (datatype & 0xff) >= MPIR_DATATYPE_N_BUILTIN || element == ELEMENT_NONE)
        return;
    for (size_t k = 0; k < N_KERNEL_OPS; k++) {
        MPI_Op op = kernel_ops[k];

        if (kernel_table[element][k] != NULL &&
            MPIR_OP_HDL_TO_DTYPE_FN(op) (datatype) == MPI_SUCCESS)
            smheap_reduce_kernels[op & 0xff][datatype & 0xff] = kernel_table[element][k];
    }
}

void smheap_reduce_init(void)
{
    /* the integer and floating types of MPICH's own lists, where a kernel has their layout */
#undef MPIR_OP_TYPE_MACRO
#define MPIR_OP_TYPE_MACRO(mpi_type_, c_type_, type_name_)                             \
    add_datatype(mpi_type_, element_of(sizeof(c_type_), (c_type_) 0.5 != 0,            \
                                       (c_type_) -1 < (c_type_) 0));
    MPIR_OP_TYPE_GROUP(C_INTEGER)
    MPIR_OP_TYPE_GROUP(C_INTEGER_EXTRA)
    MPIR_OP_TYPE_GROUP(FORTRAN_INTEGER)
    MPIR_OP_TYPE_GROUP(FORTRAN_INTEGER_EXTRA)
    MPIR_OP_TYPE_GROUP(FLOATING_POINT)
    MPIR_OP_TYPE_GROUP(FLOATING_POINT_EXTRA)
    MPIR_OP_TYPE_GROUP(BYTE)
#undef MPIR_OP_TYPE_MACRO
}
