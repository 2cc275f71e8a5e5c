#include "sandbox/shm.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fault/fault_points.h"

namespace kgym {

namespace {
constexpr int kWriteSeals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;

Status Errno(const char* what) { return Status::IOError(std::string(what) + ": " + std::strerror(errno)); }

// The calls of this file that are fault points (fault/fault_points.h): an armed one fails as the kernel fails it.
int MemfdCreate(const char* name) {
  if (fault::Hit("memfd.create")) {
    errno = ENOMEM;
    return -1;
  }
  return ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}
int AddSeals(int fd, int seals) {
  if (fault::Hit("memfd.seal")) {
    errno = EPERM;
    return -1;
  }
  return ::fcntl(fd, F_ADD_SEALS, seals);
}
void* MapShared(size_t bytes, int flags, int fd) {
  if (fault::Hit("memfd.map")) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return ::mmap(nullptr, bytes, PROT_READ, flags, fd, 0);
}
}  // namespace

bool IsWriteSealed(int fd) {
  int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & kWriteSeals) == kWriteSeals;
}

Region::~Region() {
  if (map_) ::munmap(map_, map_len_);
  if (fd_ >= 0) ::close(fd_);
}

Status Region::FromSealedMemfd(int fd, std::shared_ptr<const Region>* out) {
  std::shared_ptr<Region> r(new Region());
  r->fd_ = fd;  // closed by the destructor on every path
  if (!IsWriteSealed(fd)) return Status::InvalidArgument("shared-memory region is not a write-sealed memfd");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0) return Errno("fstat of a shared-memory region");
  // Larger than any frame may be: the sender's doing, never a mapping this process should even try.
  if (static_cast<uint64_t>(st.st_size) > kMaxRegionBytes)
    return Status::InvalidArgument("shared-memory region of " + std::to_string(st.st_size) + " bytes");
  r->size_ = static_cast<size_t>(st.st_size);
  if (r->size_ > 0) {
    void* p = MapShared(r->size_, MAP_SHARED, fd);
    if (p == MAP_FAILED) return Errno("mmap of a shared-memory region");
    r->map_ = p;
    r->map_len_ = r->size_;
    r->data_ = static_cast<const char*>(p);
  }
  *out = std::move(r);
  return Status::Ok();
}

std::shared_ptr<const Region> Region::FromBytes(std::string bytes) {
  std::shared_ptr<Region> r(new Region());
  r->heap_ = std::move(bytes);
  r->data_ = r->heap_.data();
  r->size_ = r->heap_.size();
  return r;
}

Status Region::SealedCopy(std::string_view bytes, std::shared_ptr<const Region>* out) {
  int fd = MemfdCreate("kgym-region");
  if (fd < 0) return Errno("memfd_create");
  // Each failure reads errno before the close.
  auto fail = [fd](const char* what) {
    Status s = Errno(what);
    ::close(fd);
    return s;
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes.size())) != 0) return fail("ftruncate");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t k = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return fail("pwrite");
    done += static_cast<size_t>(k);
  }
  if (AddSeals(fd, kWriteSeals | F_SEAL_SEAL) != 0) return fail("sealing a memfd");
  return FromSealedMemfd(fd, out);
}

Status Region::Lent(size_t bytes, std::shared_ptr<const Region>* out) {
  if (bytes == 0) return Status::InvalidArgument("a lent buffer needs at least one byte");
  int fd = MemfdCreate("kgym-lent");
  if (fd < 0) return Errno("memfd_create");
  std::shared_ptr<Region> r(new Region());
  r->fd_ = fd;  // closed by the destructor on every path
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return Errno("ftruncate");
  if (::fallocate(fd, 0, 0, static_cast<off_t>(bytes)) != 0) return Errno("fallocate of a lent buffer");
  if (AddSeals(fd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return Errno("sealing a lent buffer");
  void* p = MapShared(bytes, MAP_SHARED | MAP_POPULATE, fd);
  if (p == MAP_FAILED) return Errno("mmap of a lent buffer");
  r->map_ = p;
  r->map_len_ = r->size_ = bytes;
  r->data_ = static_cast<const char*>(p);
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace kgym
