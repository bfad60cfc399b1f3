! doloop.f90 — a Fortran DO-loop nest: mm multiplies two matrices with
! the loops in j, k, i order (column-major friendly); a loop nest of
! depth 3 in subroutine mm (symbol mm_).
subroutine mm(a, b, c, n)
  implicit none
  integer, intent(in) :: n
  double precision, intent(in) :: a(n, n), b(n, n)
  double precision, intent(inout) :: c(n, n)
  integer :: i, j, k
  do j = 1, n
    do k = 1, n
      do i = 1, n
        c(i, j) = c(i, j) + a(i, k) * b(k, j)
      end do
    end do
  end do
end subroutine mm

program doloop
  implicit none
  integer, parameter :: n = 48
  double precision :: a(n, n), b(n, n), c(n, n)
  integer :: i, j
  do j = 1, n
    do i = 1, n
      a(i, j) = dble(i + j) / n
      b(i, j) = dble(i - j) / n
    end do
  end do
  c = 0
  call mm(a, b, c, n)
  print '(a, f14.6)', 'checksum ', sum(c)
end program doloop
